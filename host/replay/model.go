package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/agent-worker/agent-worker/internal/modelwire"
)

// ModelServer serves a recorded run's model answers back in order, over
// the APIs the sdk backend speaks (Anthropic Messages, OpenAI Chat
// Completions, streamed or not), on a loopback port of its own. A request
// past the last recorded answer is refused with an error the backend does
// not retry, and counted (Extra).
type ModelServer struct {
	srv *http.Server
	ln  net.Listener

	// mu guards the fields that follow.
	mu    sync.Mutex
	turns []Turn
	next  int
	extra int
}

// StartModel starts a server for turns; Close stops it.
func StartModel(turns []Turn) (*ModelServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("replay model server: %w", err)
	}
	m := &ModelServer{ln: ln, turns: turns}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve)}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// URL is the server's base URL.
func (m *ModelServer) URL() string { return "http://" + m.ln.Addr().String() }

// Close stops the server.
func (m *ModelServer) Close() error { return m.srv.Close() }

// Served is how many recorded answers were served; Extra how many
// requests came after the last one.
func (m *ModelServer) Served() (served, extra int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next, m.extra
}

func (m *ModelServer) take() (Turn, int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= len(m.turns) {
		m.extra++
		return Turn{}, len(m.turns), false
	}
	m.next++
	return m.turns[m.next-1], m.next, true
}

func (m *ModelServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK) // a client's liveness probe
		return
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	_ = json.Unmarshal(raw, &body)
	anthropic := strings.HasSuffix(r.URL.Path, "/messages")
	if !anthropic && !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "replay: no model API at "+r.URL.Path, http.StatusNotFound)
		return
	}
	t, n, ok := m.take()
	if !ok {
		// 400: an error the model SDKs do not retry.
		msg := fmt.Sprintf("replay: the recording has %d model answer(s) and the replay asked for another", n)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
		return
	}
	if anthropic {
		modelwire.Anthropic(w, answer(t), body.Stream)
	} else {
		modelwire.Chat(w, answer(t), body.Stream)
	}
}

// answer is turn t as modelwire writes it.
func answer(t Turn) modelwire.Answer {
	a := modelwire.Answer{Model: "replay", Text: t.Text, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens}
	for _, c := range t.Tools {
		a.Tools = append(a.Tools, modelwire.Call{ID: c.ID, Name: c.Name, Args: string(c.Args)})
	}
	return a
}
