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
