package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/agent-worker/agent-worker/internal/modelwire"
)

// Turn is one scripted model response: text, tool calls, or an HTTP error
// (Status >= 400, e.g. 429 with RetryAfter).
type Turn struct {
	Text       string
	Tools      []ToolCall
	Status     int
	RetryAfter int // seconds, sent as retry-after with Status
	// InputTokens and OutputTokens are reported as usage.
	InputTokens, OutputTokens int64
	// Gate holds the answer until the test opens the gate of that name
	// (Open), so it can act while the client waits on the model.
	Gate string
}

// ToolCall is a tool the scripted model calls. Name must be the name the
// client offered (claude: mcp__agent-worker__channel_send).
type ToolCall struct {
	ID   string
	Name string
	Args map[string]any
	// Input makes the call one of a freeform (custom) tool of the
	// Responses API, such as Codex's apply_patch, with Input as its text;
	// Args is then unused.
	Input string
}

// Request is one request the server received.
type Request struct {
	Path    string
	Header  http.Header
	Body    map[string]any
	RawBody []byte
}

// Server is a running scripted model server.
type Server struct {
	*httptest.Server

	// mu guards the fields that follow.
	mu       sync.Mutex
	turns    []Turn
	requests []Request
	fallback Turn
	gates    map[string]chan struct{}
	onGate   func(name string)
}

// OnGate has f told the name of a gate when a request waits there.
func (s *Server) OnGate(f func(name string)) {
	s.mu.Lock()
	s.onGate = f
	s.mu.Unlock()
}

// gate returns the channel that Open closes for name.
func (s *Server) gate(name string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gates == nil {
		s.gates = map[string]chan struct{}{}
	}
	if s.gates[name] == nil {
		s.gates[name] = make(chan struct{})
	}
	return s.gates[name]
}

// Open lets the turn with Gate name answer (now, or when it is reached).
func (s *Server) Open(name string) {
	g := s.gate(name)
	select {
	case <-g:
	default:
		close(g)
	}
}

// New starts a server that answers with turns in order; once they run out
// it answers with fallback text "done". It stops when the test ends.
func New(t testing.TB, turns ...Turn) *Server {
	s := Start(turns...)
	t.Cleanup(s.Close)
	return s
}

// Start is New for a process that is not a test; the caller closes it.
func Start(turns ...Turn) *Server {
	s := &Server{turns: turns, fallback: Turn{Text: "done"}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || r.Method == http.MethodGet {
			w.WriteHeader(http.StatusOK) // liveness probes
			return
		}
		s.serve(w, r)
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

// Requests returns the model requests received so far (POSTs only).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) next(r *http.Request) (Turn, Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), RawBody: raw}
	_ = json.Unmarshal(raw, &req.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if len(s.turns) == 0 {
		return s.fallback, req
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	return t, req
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if hasSuffix(r.URL.Path, ":countTokens") {
		geminiCountTokens(w, r)
		return
	}
	turn, req := s.next(r)
	if turn.Gate != "" {
		g := s.gate(turn.Gate)
		s.mu.Lock()
		tell := s.onGate
		s.mu.Unlock()
		if tell != nil {
			tell(turn.Gate)
		}
		select {
		case <-g:
		case <-r.Context().Done():
			return
		}
	}
	if turn.Status >= 400 {
		if turn.RetryAfter > 0 {
			w.Header().Set("retry-after", strconv.Itoa(turn.RetryAfter))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"scripted error"}}`))
		return
	}
	stream, _ := req.Body["stream"].(bool)
	switch {
	case hasSuffix(r.URL.Path, "/messages"):
		modelwire.Anthropic(w, answer(turn), stream)
	case hasSuffix(r.URL.Path, "/chat/completions"):
		modelwire.Chat(w, answer(turn), stream)
	case hasSuffix(r.URL.Path, "/responses"):
		responses(w, turn)
	case hasSuffix(r.URL.Path, ":streamGenerateContent"), hasSuffix(r.URL.Path, ":generateContent"):
		gemini(w, turn, hasSuffix(r.URL.Path, ":streamGenerateContent"))
	default:
		http.Error(w, "fakemodel: no API at "+r.URL.Path, http.StatusNotFound)
	}
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

func toolID(prefix string, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return prefix + strconv.Itoa(i+1)
}

func argsJSON(c ToolCall) string {
	if c.Args == nil {
		return "{}"
	}
	b, _ := json.Marshal(c.Args)
	return string(b)
}
