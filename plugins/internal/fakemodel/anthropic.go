package fakemodel

import (
	"encoding/json"
	"net/http"
)

// anthropic answers POST /v1/messages.
func anthropic(w http.ResponseWriter, t Turn, stream bool) {
	stop := "end_turn"
	if len(t.Tools) > 0 {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens}
	if !stream {
		var content []map[string]any
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for i, c := range t.Tools {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID("toolu_", i, c), "name": c.Name, "input": json.RawMessage(argsJSON(c))})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message",
		"role": "assistant", "model": "fake", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": 0}}})
	index := 0
	if t.Text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range split(t.Text) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range t.Tools {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": toolID("toolu_", i, c), "name": c.Name, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(c)}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.OutputTokens}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// split cuts text in two parts so clients see more than one delta.
func split(text string) []string {
	r := []rune(text)
	if len(r) < 2 {
		return []string{text}
	}
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}
