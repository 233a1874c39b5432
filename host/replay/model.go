package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
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
		writeAnthropic(w, t, body.Stream)
	} else {
		writeChat(w, t, body.Stream)
	}
}

func args(c ToolCall) json.RawMessage {
	if len(c.Args) == 0 {
		return json.RawMessage("{}")
	}
	return c.Args
}

func toolID(prefix string, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d", prefix, i+1)
}

// writeAnthropic answers POST /v1/messages with turn t.
func writeAnthropic(w http.ResponseWriter, t Turn, stream bool) {
	stop := "end_turn"
	if len(t.Tools) > 0 {
		stop = "tool_use"
	}
	if !stream {
		content := []map[string]any{}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for i, c := range t.Tools {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID("toolu_", i, c), "name": c.Name, "input": args(c)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_replay", "type": "message", "role": "assistant", "model": "replay",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens}})
		return
	}
	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_replay", "type": "message",
		"role": "assistant", "model": "replay", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": 0}}})
	index := 0
	if t.Text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": t.Text}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range t.Tools {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": toolID("toolu_", i, c), "name": c.Name, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args(c))}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.OutputTokens}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// writeChat answers POST /chat/completions with turn t.
func writeChat(w http.ResponseWriter, t Turn, stream bool) {
	finish := "stop"
	var calls []map[string]any
	for i, c := range t.Tools {
		calls = append(calls, map[string]any{"index": i, "id": toolID("call_", i, c), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args(c))}})
	}
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": t.InputTokens, "completion_tokens": t.OutputTokens, "total_tokens": t.InputTokens + t.OutputTokens}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": t.Text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-replay", "object": "chat.completion", "created": 0, "model": "replay",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	startSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 0, "model": "replay",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		sse(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if t.Text != "" {
		chunk(map[string]any{"content": t.Text}, nil, nil)
	}
	if len(calls) > 0 {
		chunk(map[string]any{"tool_calls": calls}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		_, _ = io.WriteString(w, "event: "+event+"\n")
	}
	_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}
