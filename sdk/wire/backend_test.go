package wire

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// fullRequest sets every field, so that a field the conversion forgets
// shows up as a diff.
var fullRequest = backend.Request{
	RunID:   "run-42",
	Attempt: 3,
	Agent: backend.Agent{
		Name: "alice", Workflow: "review", Tag: "pr-7", Model: "sonnet",
		System: "You review code.", Config: json.RawMessage(`{"max_turns":5}`),
	},
	Daemon: backend.MCPServer{
		Name: "agent-worker", URL: "http://127.0.0.1:5099/mcp",
		Headers: map[string]string{"Authorization": "Bearer t0k"},
	},
	MCPServers: []backend.MCPServer{
		{Name: "fs", Command: []string{"mcp-fs", "--root", "/src"}, Env: map[string]string{"DEBUG": "1"}},
		{Name: "web", URL: "https://example.com/mcp"},
	},
	WorkDir:       "/tmp/run-42",
	ProjectDir:    "/src/project",
	Repos:         []backend.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: "/wt/app", Write: true}},
	ResumeSession: "sess-1",
	StateDir:      "/home/u/.agent-worker/state/x",
	Env:           map[string]string{"GIT_AUTHOR_NAME": "alice", "EMPTY": ""},
	RunContext: &backend.RunContext{
		Inbox: tools.InboxResult{Messages: []tools.Message{{
			Seq: 7, ID: "msg_7", Workflow: "review", Tag: "pr-7", From: "bob", Content: "@alice look", Kind: "message",
			Mentions: []string{"alice"}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local),
		}}, Count: 1, NewestSeq: 7},
		Recent: []tools.Message{
			{Seq: 6, ID: "msg_6", From: "user", Content: "long", Kind: "message", Mentions: []string{}, ResourceID: "res_1"},
			{Seq: 7, ID: "msg_7", From: "bob", To: "alice", Content: "dm", Kind: "message", Mentions: []string{"alice"}},
		},
		Effort: &tools.EffortContext{EffortResult: tools.EffortResult{Effort: "effort-1", Skill: "implement", Dir: "/w", Ordinal: 1, State: "active",
			Phase: &tools.EffortPhase{N: 1, Of: 2, Name: "plan"}, Token: "t"}, Here: "here", Notes: []tools.EffortNote{{Phase: "plan", Notes: "n"}}},
		Notes:     "# Notes\n",
		Documents: []tools.DocumentInfo{{Path: "notes.md", Size: 8, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)}, {Path: "plan.md"}},
	},
}

// wire sends m through proto encoding, as gRPC does, so that tests see
// what the other side would (nil and empty become the same).
func wire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRequestConversion(t *testing.T) {
	t.Parallel()
	tests := map[string]backend.Request{
		"zero": {},
		"full": fullRequest,
		"empty collections": {
			Agent:      backend.Agent{Config: json.RawMessage{}},
			Daemon:     backend.MCPServer{Headers: map[string]string{}, Command: []string{}},
			MCPServers: []backend.MCPServer{},
			Env:        map[string]string{},
		},
	}
	// An empty context stays a context (the worker must not fetch), with
	// empty lists as the tools return them.
	tests["empty context"] = backend.Request{RunContext: &backend.RunContext{}}
	want := map[string]backend.Request{"zero": {}, "full": fullRequest, "empty collections": {},
		"empty context": {RunContext: &backend.RunContext{Inbox: tools.InboxResult{Messages: []tools.Message{}},
			Recent: []tools.Message{}, Documents: []tools.DocumentInfo{}}}}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			got := RequestFromProto(wire(t, RequestToProto(in)))
			if diff := cmp.Diff(want[name], got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(backend.Request{}, RequestFromProto(nil)); diff != "" {
		t.Errorf("RequestFromProto(nil) (-want +got):\n%s", diff)
	}
}

func TestRequestToProtoFields(t *testing.T) {
	t.Parallel()
	want := &pluginv1.RunRequest{
		RunId:   "run-42",
		Attempt: 3,
		Agent: &pluginv1.Agent{Name: "alice", Workflow: "review", Tag: "pr-7", Model: "sonnet",
			System: "You review code.", Config: []byte(`{"max_turns":5}`)},
		Daemon: &pluginv1.McpServer{Name: "agent-worker", Url: "http://127.0.0.1:5099/mcp",
			Headers: map[string]string{"Authorization": "Bearer t0k"}},
		McpServers: []*pluginv1.McpServer{
			{Name: "fs", Command: []string{"mcp-fs", "--root", "/src"}, Env: map[string]string{"DEBUG": "1"}},
			{Name: "web", Url: "https://example.com/mcp"},
		},
		WorkDir: "/tmp/run-42", ProjectDir: "/src/project", ResumeSession: "sess-1", StateDir: "/home/u/.agent-worker/state/x",
		Repos: []*pluginv1.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: "/wt/app", Write: true}},
		Env:   map[string]string{"GIT_AUTHOR_NAME": "alice", "EMPTY": ""},
		Context: &pluginv1.RunContext{
			Inbox: []*pluginv1.ChannelMessage{{Seq: 7, Id: "msg_7", Workflow: "review", Tag: "pr-7", From: "bob", Content: "@alice look",
				Kind: "message", Mentions: []string{"alice"}, CreatedAt: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local))}},
			InboxNewestSeq: 7,
			Recent: []*pluginv1.ChannelMessage{
				{Seq: 6, Id: "msg_6", From: "user", Content: "long", Kind: "message", Mentions: []string{}, ResourceId: "res_1"},
				{Seq: 7, Id: "msg_7", From: "bob", To: "alice", Content: "dm", Kind: "message", Mentions: []string{"alice"}},
			},
			Notes: "# Notes\n",
			Documents: []*pluginv1.DocumentInfo{
				{Path: "notes.md", Size: 8, UpdatedAt: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local))},
				{Path: "plan.md"},
			},
			EffortJson: mustJSON(t, fullRequest.RunContext.Effort),
		},
	}
	if diff := cmp.Diff(want, RequestToProto(fullRequest), protocmp.Transform()); diff != "" {
		t.Errorf("RequestToProto (-want +got):\n%s", diff)
	}
}

func TestEventConversion(t *testing.T) {
	t.Parallel()
	tool := &backend.ToolCall{ID: "call-1", Name: "channel_send", Args: json.RawMessage(`{"text":"hi"}`), Result: "ok", IsError: true}
	// A shell result's exit status crosses, 0 included; a tool without
	// one (above) stays nil.
	shell := func(code int) *backend.ToolCall {
		return &backend.ToolCall{ID: "call-2", Name: "run_shell", Args: json.RawMessage(`{"command":"go vet ./..."}`), Result: "[exit status]", Exit: &code}
	}
	// A model call's times cross to the nanosecond; its tokens are its own.
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.Local)
	call := &backend.ModelCall{Model: "claude-sonnet-4-5", ResponseModel: "claude-sonnet-4-5-20250929", Start: start, End: start.Add(1500 * time.Millisecond),
		InputTokens: 20, OutputTokens: 5, FinishReasons: []string{"tool_use"}}
	tests := map[string]struct {
		in, want backend.Event
	}{
		"text":             {backend.Event{Kind: backend.EventText, Text: "Hel"}, backend.Event{Kind: backend.EventText, Text: "Hel"}},
		"empty text":       {backend.Event{Kind: backend.EventText}, backend.Event{Kind: backend.EventText}},
		"result":           {backend.Event{Kind: backend.EventResult, Text: "done ✓"}, backend.Event{Kind: backend.EventResult, Text: "done ✓"}},
		"log":              {backend.Event{Kind: backend.EventLog, Text: "stderr line"}, backend.Event{Kind: backend.EventLog, Text: "stderr line"}},
		"tool call":        {backend.Event{Kind: backend.EventToolCall, Tool: tool}, backend.Event{Kind: backend.EventToolCall, Tool: tool}},
		"tool result":      {backend.Event{Kind: backend.EventToolResult, Tool: tool}, backend.Event{Kind: backend.EventToolResult, Tool: tool}},
		"gate":             {backend.Event{Kind: backend.EventGate, Text: "phase plan does not allow write_file"}, backend.Event{Kind: backend.EventGate, Text: "phase plan does not allow write_file"}},
		"shell exit 0":     {backend.Event{Kind: backend.EventToolResult, Tool: shell(0)}, backend.Event{Kind: backend.EventToolResult, Tool: shell(0)}},
		"shell exit 2":     {backend.Event{Kind: backend.EventToolResult, Tool: shell(2)}, backend.Event{Kind: backend.EventToolResult, Tool: shell(2)}},
		"nil tool":         {backend.Event{Kind: backend.EventToolCall}, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{}}},
		"usage":            {backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 1200, OutputTokens: 345, CostUSD: 0.0123}}, backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 1200, OutputTokens: 345, CostUSD: 0.0123}}},
		"nil usage":        {backend.Event{Kind: backend.EventUsage}, backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{}}},
		"usage with call":  {backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 30, OutputTokens: 7, Call: call}}, backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 30, OutputTokens: 7, Call: call}}},
		"zero call":        {backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{Call: &backend.ModelCall{}}}, backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{Call: &backend.ModelCall{}}}},
		"heartbeat":        {backend.Event{Kind: backend.EventHeartbeat}, backend.Event{Kind: backend.EventHeartbeat}},
		"session":          {backend.Event{Kind: backend.EventSession, SessionID: "sess-9"}, backend.Event{Kind: backend.EventSession, SessionID: "sess-9"}},
		"other kind field": {backend.Event{Kind: backend.EventSession, SessionID: "s", Text: "dropped"}, backend.Event{Kind: backend.EventSession, SessionID: "s"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, err := EventToProto(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := EventFromProto(wire(t, resp))
			if !ok {
				t.Fatalf("EventFromProto(%v) is not an event", resp)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventConversionRejectsUnknown(t *testing.T) {
	t.Parallel()
	for _, kind := range []backend.EventKind{"", "txt", "RESULT"} {
		if _, err := EventToProto(backend.Event{Kind: kind, Text: "x"}); !errors.Is(err, sdk.ErrInvalid) {
			t.Errorf("EventToProto(kind %q) = %v, want sdk.ErrInvalid", kind, err)
		}
	}
	// Responses that are not events: none at all, an empty one, an error.
	for name, r := range map[string]*pluginv1.RunResponse{
		"nil":   nil,
		"zero":  {},
		"error": {Response: &pluginv1.RunResponse_Error{Error: &pluginv1.Error{Message: "x"}}},
	} {
		if e, ok := EventFromProto(r); ok {
			t.Errorf("EventFromProto(%s) = %+v, want no event", name, e)
		}
	}
}

func TestErrorConversion(t *testing.T) {
	t.Parallel()
	if ErrorToProto(nil) != nil || ErrorFromProto(nil) != nil {
		t.Error("nil must stay nil")
	}
	zero := ErrorFromProto(&pluginv1.Error{})
	if zero == nil || zero.Error() == "" || backend.IsPermanent(zero) || sdk.Class(zero) != nil {
		t.Errorf("ErrorFromProto(zero) = %v, want a plain retryable error with a message", zero)
	}
	in := backend.Permanent(sdk.Errorf(sdk.ErrPermission, "API key for %s is revoked", "anthropic"))
	want := &pluginv1.Error{Message: "API key for anthropic is revoked", Class: pluginv1.ErrorClass_ERROR_CLASS_PERMISSION, Permanent: true}
	if diff := cmp.Diff(want, ErrorToProto(in), protocmp.Transform()); diff != "" {
		t.Errorf("ErrorToProto (-want +got):\n%s", diff)
	}
	got := ErrorFromProto(wire(t, ErrorToProto(in)))
	if got.Error() != in.Error() || !backend.IsPermanent(got) || !errors.Is(got, sdk.ErrPermission) {
		t.Errorf("round trip = %v (permanent %v, class %v)", got, backend.IsPermanent(got), sdk.Class(got))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
