package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// The context use and the last words come from the last real model
// answer in Claude's transcript (a synthetic one, such as "Not enough
// messages to compact.", is not the model's), and only PreCompact sends
// the words.
func TestHookInputFromTranscript(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := []string{
		`{"type":"user","message":{"content":"PROMPT"}}`,
		`{"type":"assistant","message":{"model":"m","usage":{"input_tokens":100,"cache_read_input_tokens":50,"cache_creation_input_tokens":5,"output_tokens":7},"content":[{"type":"text","text":"I will plan next"}]}}`,
		`{"type":"assistant","message":{"model":"m","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"tool_use","name":"Read"}]}}`,
		`not json`,
		`{"type":"assistant","message":{"model":"<synthetic>","usage":{"input_tokens":0},"content":[{"type":"text","text":"Not enough messages to compact."}]}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := hookInput{SessionID: "s", TranscriptPath: path, ToolResponse: json.RawMessage(`{ "a" : 1 }`)}
	c := in.call(api.HookPreCompact)
	if c.ContextTokens != 162 || c.LastAssistant != "I will plan next" || c.ToolResult != `{"a":1}` {
		t.Errorf("PreCompact call = %d tokens, %q, result %q; want 162, the last real text, the compacted result", c.ContextTokens, c.LastAssistant, c.ToolResult)
	}
	if c := in.call(api.HookPostToolUse); c.LastAssistant != "" || c.ContextTokens != 162 {
		t.Errorf("PostToolUse call = %+v; want the context use and no last words", c)
	}
	if c := (hookInput{TranscriptPath: filepath.Join(t.TempDir(), "none")}).call(api.HookStop); c.ContextTokens != 0 {
		t.Errorf("a missing transcript gave %d tokens", c.ContextTokens)
	}
}

// A SessionStart that continues a session says so and carries the
// payload; directives come into SessionStart and PostToolUse, a file too
// long for the hook's output named instead of shown; PreCompact adds
// nothing.
func TestHookOutputOfSessions(t *testing.T) {
	t.Parallel()
	text := func(b []byte) string {
		var v struct {
			HookSpecificOutput struct{ AdditionalContext string } `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return v.HookSpecificOutput.AdditionalContext
	}
	ds := []api.SessionDirective{{Path: "/p/sub/AGENTS.md", Content: "SHORT-MARK"}, {Path: "/p/sub/INVARIANTS.md", Content: strings.Repeat("x", 20000)}}
	start := text(hookOutput(api.HookSessionStart, api.HookDelivery{Agent: "me", Resume: "PAYLOAD-MARK", ResumeFrom: "s0", Directives: ds}))
	for _, want := range []string{"continues session s0", "PAYLOAD-MARK", "SHORT-MARK", "/p/sub/INVARIANTS.md\n(too long to show here: read the file)"} {
		if !strings.Contains(start, want) {
			t.Errorf("SessionStart's context lacks %q:\n%s", want, start)
		}
	}
	if len(start) > hookContextChars {
		t.Errorf("SessionStart's context is %d characters, over %d", len(start), hookContextChars)
	}
	if got := text(hookOutput(api.HookPostToolUse, api.HookDelivery{Agent: "me", Directives: ds[:1]})); !strings.Contains(got, "SHORT-MARK") {
		t.Errorf("PostToolUse's context = %q", got)
	}
	if out := hookOutput(api.HookPreCompact, api.HookDelivery{Agent: "me", Directives: ds}); out != nil {
		t.Errorf("PreCompact answered %s", out)
	}
}
