package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
)

// chat answers POST /chat/completions.
func chat(w http.ResponseWriter, t Turn, stream bool) {
	finish := "stop"
	var calls []map[string]any
	for i, c := range t.Tools {
		calls = append(calls, map[string]any{"index": i, "id": toolID("call_", i, c), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": argsJSON(c)}})
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
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	startSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		sse(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, part := range split(t.Text) {
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
