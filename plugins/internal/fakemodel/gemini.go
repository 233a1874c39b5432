package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/agent-worker/agent-worker/internal/modelwire"
)

// gemini answers the Gemini API's POST /v1beta/models/{model}:generateContent
// and :streamGenerateContent?alt=sse (as the Gemini CLI uses it): text as
// text parts, tool calls as functionCall parts, the usage as
// usageMetadata. A stream sends the text in two chunks, then one chunk
// with the calls, the finishReason and the usage.
func gemini(w http.ResponseWriter, t Turn, stream bool) {
	var parts []map[string]any
	for i, c := range t.Tools {
		var args any = map[string]any{}
		if c.Args != nil {
			args = c.Args
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": toolID("call_", i, c), "name": c.Name, "args": args}})
	}
	usage := map[string]any{"promptTokenCount": t.InputTokens, "candidatesTokenCount": t.OutputTokens,
		"totalTokenCount": t.InputTokens + t.OutputTokens}
	chunk := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": parts}}
		resp := map[string]any{"candidates": []any{cand}, "modelVersion": "fake", "responseId": "resp_fake"}
		if last {
			cand["finishReason"] = "STOP"
			resp["usageMetadata"] = usage
		}
		return resp
	}
	if !stream {
		all := parts
		if t.Text != "" {
			all = append([]map[string]any{{"text": t.Text}}, parts...)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(chunk(all, true))
		return
	}
	modelwire.StartSSE(w)
	for _, part := range modelwire.Split(t.Text) {
		if part != "" {
			modelwire.SSE(w, "", chunk([]map[string]any{{"text": part}}, false))
		}
	}
	if parts == nil {
		parts = []map[string]any{}
	}
	modelwire.SSE(w, "", chunk(parts, true))
}

// geminiCountTokens answers :countTokens with a rough count of the
// request's text; it takes no turn of the script.
func geminiCountTokens(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"totalTokens": len(strings.Fields(string(raw)))})
}
