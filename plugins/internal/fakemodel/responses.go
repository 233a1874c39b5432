package fakemodel

import (
	"net/http"
	"strings"

	"github.com/agent-worker/agent-worker/internal/modelwire"
)

// responses answers POST /responses (the OpenAI Responses API, as Codex
// uses it): text as an output message, tool calls as function_call items.
// Codex offers an MCP server's tools as a namespace (mcp__agent_worker,
// the server name with - turned into _) and runs a call only when it
// carries that namespace, so a scripted mcp__<server>__<tool> is sent as
// namespace mcp__<server> and name <tool>. A call with Input is a
// custom_tool_call, the freeform kind (Codex's apply_patch).
func responses(w http.ResponseWriter, t Turn) {
	modelwire.StartSSE(w)
	resp := map[string]any{"id": "resp_fake", "object": "response", "status": "in_progress", "model": "fake", "output": []any{}}
	modelwire.SSE(w, "response.created", map[string]any{"type": "response.created", "response": resp})
	var output []any
	idx := 0
	if t.Text != "" {
		item := map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
		modelwire.SSE(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx,
			"item": map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, part := range modelwire.Split(t.Text) {
			modelwire.SSE(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake",
				"output_index": idx, "content_index": 0, "delta": part})
		}
		modelwire.SSE(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for i, c := range t.Tools {
		item := map[string]any{"type": "function_call", "id": "fc_" + toolID("", i, c), "call_id": toolID("call_", i, c),
			"name": c.Name, "arguments": argsJSON(c), "status": "completed"}
		if ns, name, ok := mcpNamespace(c.Name); ok {
			item["namespace"], item["name"] = ns, name
		}
		if c.Input != "" {
			item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + toolID("", i, c), "call_id": toolID("call_", i, c),
				"name": c.Name, "input": c.Input, "status": "completed"}
			modelwire.SSE(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
			modelwire.SSE(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
			output = append(output, item)
			idx++
			continue
		}
		modelwire.SSE(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		modelwire.SSE(w, "response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done",
			"item_id": item["id"], "output_index": idx, "arguments": item["arguments"]})
		modelwire.SSE(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens, "total_tokens": t.InputTokens + t.OutputTokens,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	modelwire.SSE(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// mcpNamespace splits mcp__<server>__<tool> into its namespace and tool.
func mcpNamespace(name string) (namespace, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	i := strings.LastIndex(rest, "__")
	if !ok || i <= 0 {
		return "", name, false
	}
	return name[:len("mcp__")+i], rest[i+2:], true
}
