// Package modelwire writes model answers as the model APIs carry them:
// Anthropic Messages and OpenAI Chat Completions, whole or streamed as
// server-sent events. One copy for the servers that stand in for a model:
// the tests' scripted server (plugins/internal/fakemodel) and the replay
// of a recorded run (host/replay). It imports the standard library only,
// so a plugin-side package may use it.
package modelwire

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// Answer is one answer of the model.
type Answer struct {
	// Model names the server in the answer's ids and model field
	// ("fake", "replay").
	Model string
	Text  string
	Tools []Call
	// InputTokens and OutputTokens are reported as usage.
	InputTokens, OutputTokens int64
	// Split streams the text in two deltas, so that a client is seen to
	// join them.
	Split bool
}

// Call is one tool call of an answer.
type Call struct {
	// ID is the call's id; "" numbers it (toolu_1, call_1 …).
	ID, Name string
	// Args is the call's arguments as JSON; "" is {}.
	Args string
}

func (c Call) id(prefix string, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return prefix + strconv.Itoa(i+1)
}

func (c Call) args() string {
	if c.Args == "" {
		return "{}"
	}
	return c.Args
}

// parts is the text as it is streamed: in two parts when Split.
func (a Answer) parts() []string {
	if !a.Split {
		return []string{a.Text}
	}
	return Split(a.Text)
}

// Split cuts text in two halves (one part when it is shorter than two
// runes), for a stream in more than one delta.
func Split(text string) []string {
	r := []rune(text)
	if len(r) < 2 {
		return []string{text}
	}
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}

// Anthropic answers POST /v1/messages with a.
func Anthropic(w http.ResponseWriter, a Answer, stream bool) {
	stop := "end_turn"
	if len(a.Tools) > 0 {
		stop = "tool_use"
	}
	id := "msg_" + a.Model
	if !stream {
		content := []map[string]any{}
		if a.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": a.Text})
		}
		for i, c := range a.Tools {
			content = append(content, map[string]any{"type": "tool_use", "id": c.id("toolu_", i), "name": c.Name, "input": json.RawMessage(c.args())})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": a.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": a.InputTokens, "output_tokens": a.OutputTokens}})
		return
	}
	StartSSE(w)
	SSE(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": a.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": a.InputTokens, "output_tokens": 0}}})
	index := 0
	if a.Text != "" {
		SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range a.parts() {
			SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
		SSE(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range a.Tools {
		SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.id("toolu_", i), "name": c.Name, "input": map[string]any{}}})
		SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": c.args()}})
		SSE(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	SSE(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.OutputTokens}})
	SSE(w, "message_stop", map[string]any{"type": "message_stop"})
}

// Chat answers POST /chat/completions with a.
func Chat(w http.ResponseWriter, a Answer, stream bool) {
	finish := "stop"
	var calls []map[string]any
	for i, c := range a.Tools {
		calls = append(calls, map[string]any{"index": i, "id": c.id("call_", i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.args()}})
	}
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	id := "chatcmpl-" + a.Model
	usage := map[string]any{"prompt_tokens": a.InputTokens, "completion_tokens": a.OutputTokens, "total_tokens": a.InputTokens + a.OutputTokens}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": a.Text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": a.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	StartSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": a.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		SSE(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, part := range a.parts() {
		if part != "" {
			chunk(map[string]any{"content": part}, nil, nil)
		}
	}
	if len(calls) > 0 {
		chunk(map[string]any{"tool_calls": calls}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// SSE writes one server-sent event (event "" for a data-only one) and
// flushes it.
func SSE(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		_, _ = io.WriteString(w, "event: "+event+"\n")
	}
	_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// StartSSE sends the headers of an event stream.
func StartSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}
