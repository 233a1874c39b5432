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

// responses answers POST /responses (the OpenAI Responses API, as Codex
// uses it): text as an output message, tool calls as function_call items.
func responses(w http.ResponseWriter, t Turn) {
	startSSE(w)
	resp := map[string]any{"id": "resp_fake", "object": "response", "status": "in_progress", "model": "fake", "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": resp})
	var output []any
	idx := 0
	if t.Text != "" {
		item := map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx,
			"item": map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, part := range split(t.Text) {
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake",
				"output_index": idx, "content_index": 0, "delta": part})
		}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for i, c := range t.Tools {
		item := map[string]any{"type": "function_call", "id": "fc_" + toolID("", i, c), "call_id": toolID("call_", i, c),
			"name": c.Name, "arguments": argsJSON(c), "status": "completed"}
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		sse(w, "response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done",
			"item_id": item["id"], "output_index": idx, "arguments": item["arguments"]})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens, "total_tokens": t.InputTokens + t.OutputTokens,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
}
