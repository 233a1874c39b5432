package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/store"
)

func ev(kind string, data any) store.RunEvent {
	b, _ := json.Marshal(data)
	return store.RunEvent{Kind: kind, Data: string(b)}
}

func text(s string) store.RunEvent { return ev("text", map[string]string{"text": s}) }

func usage(in, out int64) store.RunEvent {
	return ev("usage", map[string]int64{"InputTokens": in, "OutputTokens": out})
}

func call(name, args string) store.RunEvent {
	return ev("tool_call", map[string]any{"ID": "t1", "Name": name, "Args": json.RawMessage(args)})
}

func result(name string, isErr bool) store.RunEvent {
	return ev("tool_result", map[string]any{"ID": "t1", "Name": name, "Result": "r", "IsError": isErr})
}

// An sdk transcript gives back the model's answers: text before each
// usage event (the blank line between turns dropped), tool calls after
// it, each turn's own tokens; the max_steps notice and the memory
// summary's call are the backend's, not answers.
func TestTurns(t *testing.T) {
	t.Parallel()
	events := []store.RunEvent{
		ev("prompt", map[string]any{}), text("let me "), text("look"), usage(100, 10),
		call("read_file", `{"path":"a"}`), result("read_file", false),
		text("\n\nall done"), usage(250, 15),
		text("\n\n[sdk: stopped after max_steps=1 …]"),
		usage(300, 20), ev("log", map[string]string{"text": "sdk: memory: forgot 2 runs, keeping this summary:\n…"}),
		ev("result", map[string]string{"text": "all done"}),
	}
	got, err := Turns(events)
	if err != nil {
		t.Fatal(err)
	}
	want := []Turn{
		{Text: "let me look", Tools: []ToolCall{{ID: "t1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)}}, InputTokens: 100, OutputTokens: 10},
		{Text: "all done", InputTokens: 150, OutputTokens: 5},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Turns (-want +got):\n%s", d)
	}
	if _, err := Turns([]store.RunEvent{ev("text", map[string]int{"truncated": 99999}), usage(1, 1)}); err == nil {
		t.Error("a transcript with a text event not kept whole gave turns")
	}
	if _, err := Turns([]store.RunEvent{ev("prompt", map[string]any{})}); err == nil {
		t.Error("a transcript without answers gave turns")
	}
}

// Diverge names the first step that differs: text, a tool call's name or
// arguments (key order aside), a tool's outcome, the result, or a run
// that ended sooner; a tool result's text is not compared.
func TestDiverge(t *testing.T) {
	t.Parallel()
	base := []store.RunEvent{text("hi"), usage(1, 1), call("write_file", `{"a":1,"b":2}`), result("write_file", false), ev("result", map[string]string{"text": "done"})}
	tests := map[string]struct {
		replayed []store.RunEvent
		want     string // What, "" for no divergence
	}{
		"same, arguments in another order": {[]store.RunEvent{text("hi"), call("write_file", `{"b":2, "a":1}`), ev("tool_result", map[string]any{"Name": "write_file", "Result": "other"}), ev("result", map[string]string{"text": "done"})}, ""},
		"other text":                       {[]store.RunEvent{text("hello"), call("write_file", `{"a":1,"b":2}`), result("write_file", false), ev("result", map[string]string{"text": "done"})}, "text"},
		"other arguments":                  {[]store.RunEvent{text("hi"), call("write_file", `{"a":2,"b":2}`), result("write_file", false), ev("result", map[string]string{"text": "done"})}, "tool call"},
		"a refused tool":                   {[]store.RunEvent{text("hi"), call("write_file", `{"a":1,"b":2}`), result("write_file", true), ev("result", map[string]string{"text": "done"})}, "tool result"},
		"ended sooner":                     {[]store.RunEvent{text("hi")}, "tool call"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := Diverge(base, tc.replayed)
			switch {
			case tc.want == "" && d != nil:
				t.Errorf("divergence %+v, want none", d)
			case tc.want != "" && (d == nil || d.What != tc.want):
				t.Errorf("divergence %+v, want one at a %s", d, tc.want)
			}
		})
	}
}
