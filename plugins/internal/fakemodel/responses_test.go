package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestMCPNamespace(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		namespace, tool string
		ok              bool
	}{
		"mcp__agent_worker__channel_send": {"mcp__agent_worker", "channel_send", true},
		"mcp__a__b__c":                    {"mcp__a__b", "c", true},
		"mcp__alone":                      {"", "mcp__alone", false},
		"exec_command":                    {"", "exec_command", false},
		"not__mcp":                        {"", "not__mcp", false},
	}
	for name, tc := range tests {
		ns, tool, ok := mcpNamespace(name)
		if ns != tc.namespace || tool != tc.tool || ok != tc.ok {
			t.Errorf("mcpNamespace(%q) = %q, %q, %v; want %q, %q, %v", name, ns, tool, ok, tc.namespace, tc.tool, tc.ok)
		}
	}
}

// The stream codex 0.169 reads: function calls carry their MCP namespace,
// and response.completed ends it with the usage.
func TestResponsesStream(t *testing.T) {
	t.Parallel()
	s := New(t, Turn{Text: "hi", Tools: []ToolCall{{Name: "mcp__agent_worker__channel_send", Args: map[string]any{"message": "x"}}, {Name: "exec_command"}},
		InputTokens: 3, OutputTokens: 2})
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e map[string]any
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
	}
	var calls []map[string]any
	for _, e := range events {
		if item, _ := e["item"].(map[string]any); e["type"] == "response.output_item.done" && item["type"] == "function_call" {
			calls = append(calls, item)
		}
	}
	if len(calls) != 2 || calls[0]["namespace"] != "mcp__agent_worker" || calls[0]["name"] != "channel_send" ||
		calls[0]["arguments"] != `{"message":"x"}` || calls[1]["namespace"] != nil || calls[1]["name"] != "exec_command" {
		t.Errorf("function calls = %v", calls)
	}
	last := events[len(events)-1]
	usage, _ := last["response"].(map[string]any)["usage"].(map[string]any)
	if last["type"] != "response.completed" || usage["input_tokens"] != 3.0 || usage["output_tokens"] != 2.0 {
		t.Errorf("last event = %v, want response.completed with the usage", last)
	}
}

// The Gemini API as gemini-cli 0.61.0 reads it: a stream of
// GenerateContentResponse chunks, the text first, then the function
// calls with the finishReason and the usageMetadata; :countTokens takes
// no turn of the script.
func TestGeminiStream(t *testing.T) {
	t.Parallel()
	s := New(t, Turn{Text: "hi", Tools: []ToolCall{{Name: "mcp_agent-worker_channel_send", Args: map[string]any{"message": "x"}}},
		InputTokens: 3, OutputTokens: 2}, Turn{Text: "second"})
	resp, err := http.Post(s.URL+"/v1beta/models/gemini-2.5-flash:countTokens", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Post(s.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type chunk struct {
		Candidates []struct {
			Content struct {
				Role  string
				Parts []struct {
					Text         string
					FunctionCall *struct {
						Name string
						Args map[string]any
					}
				}
			}
			FinishReason string
		}
		UsageMetadata *struct{ PromptTokenCount, CandidatesTokenCount int64 }
	}
	var chunks []chunk
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var c chunk
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	}
	var text string
	for _, c := range chunks[:len(chunks)-1] {
		text += c.Candidates[0].Content.Parts[0].Text
	}
	last := chunks[len(chunks)-1]
	cand := last.Candidates[0]
	if text != "hi" || cand.FinishReason != "STOP" || cand.Content.Role != "model" || len(cand.Content.Parts) != 1 ||
		cand.Content.Parts[0].FunctionCall == nil || cand.Content.Parts[0].FunctionCall.Name != "mcp_agent-worker_channel_send" ||
		cand.Content.Parts[0].FunctionCall.Args["message"] != "x" {
		t.Errorf("chunks = %+v", chunks)
	}
	if u := last.UsageMetadata; u == nil || u.PromptTokenCount != 3 || u.CandidatesTokenCount != 2 {
		t.Errorf("usage = %+v, want 3 in, 2 out", u)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" {
		t.Errorf("requests = %+v, want the stream only (countTokens takes no turn)", r)
	}
}
