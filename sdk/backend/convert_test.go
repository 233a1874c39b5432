package backend

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
	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// fullRequest sets every field, so that a field the conversion forgets
// shows up as a diff.
var fullRequest = Request{
	RunID:   "run-42",
	Attempt: 3,
	Agent: Agent{
		Name: "alice", Workflow: "review", Tag: "pr-7", Model: "sonnet",
		System: "You review code.", Config: json.RawMessage(`{"max_turns":5}`),
	},
	Daemon: MCPServer{
		Name: "agent-worker", URL: "http://127.0.0.1:5099/mcp",
		Headers: map[string]string{"Authorization": "Bearer t0k"},
	},
	MCPServers: []MCPServer{
		{Name: "fs", Command: []string{"mcp-fs", "--root", "/src"}, Env: map[string]string{"DEBUG": "1"}},
		{Name: "web", URL: "https://example.com/mcp"},
	},
	WorkDir:       "/tmp/run-42",
	ProjectDir:    "/src/project",
	ResumeSession: "sess-1",
	StateDir:      "/home/u/.agent-worker/state/x",
	Env:           map[string]string{"GIT_AUTHOR_NAME": "alice", "EMPTY": ""},
	RunContext: &RunContext{
		Inbox: tools.InboxResult{Messages: []tools.Message{{
			Seq: 7, ID: "msg_7", Workflow: "review", Tag: "pr-7", From: "bob", Content: "@alice look", Kind: "message",
			Mentions: []string{"alice"}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local),
		}}, Count: 1, NewestSeq: 7},
		Recent: []tools.Message{
			{Seq: 6, ID: "msg_6", From: "user", Content: "long", Kind: "message", Mentions: []string{}, ResourceID: "res_1"},
			{Seq: 7, ID: "msg_7", From: "bob", To: "alice", Content: "dm", Kind: "message", Mentions: []string{"alice"}},
		},
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
	tests := map[string]Request{
		"zero": {},
		"full": fullRequest,
		"empty collections": {
			Agent:      Agent{Config: json.RawMessage{}},
			Daemon:     MCPServer{Headers: map[string]string{}, Command: []string{}},
			MCPServers: []MCPServer{},
			Env:        map[string]string{},
		},
	}
	// An empty context stays a context (the worker must not fetch), with
	// empty lists as the tools return them.
	tests["empty context"] = Request{RunContext: &RunContext{}}
	want := map[string]Request{"zero": {}, "full": fullRequest, "empty collections": {},
		"empty context": {RunContext: &RunContext{Inbox: tools.InboxResult{Messages: []tools.Message{}},
			Recent: []tools.Message{}, Documents: []tools.DocumentInfo{}}}}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			got := requestFromProto(wire(t, requestToProto(in)))
			if diff := cmp.Diff(want[name], got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(Request{}, requestFromProto(nil)); diff != "" {
		t.Errorf("requestFromProto(nil) (-want +got):\n%s", diff)
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
		Env: map[string]string{"GIT_AUTHOR_NAME": "alice", "EMPTY": ""},
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
		},
	}
	if diff := cmp.Diff(want, requestToProto(fullRequest), protocmp.Transform()); diff != "" {
		t.Errorf("requestToProto (-want +got):\n%s", diff)
	}
}

func TestEventConversion(t *testing.T) {
	t.Parallel()
	tool := &ToolCall{ID: "call-1", Name: "channel_send", Args: json.RawMessage(`{"text":"hi"}`), Result: "ok", IsError: true}
	tests := map[string]struct {
		in, want Event
	}{
		"text":             {Event{Kind: EventText, Text: "Hel"}, Event{Kind: EventText, Text: "Hel"}},
		"empty text":       {Event{Kind: EventText}, Event{Kind: EventText}},
		"result":           {Event{Kind: EventResult, Text: "done ✓"}, Event{Kind: EventResult, Text: "done ✓"}},
		"log":              {Event{Kind: EventLog, Text: "stderr line"}, Event{Kind: EventLog, Text: "stderr line"}},
		"tool call":        {Event{Kind: EventToolCall, Tool: tool}, Event{Kind: EventToolCall, Tool: tool}},
		"tool result":      {Event{Kind: EventToolResult, Tool: tool}, Event{Kind: EventToolResult, Tool: tool}},
		"nil tool":         {Event{Kind: EventToolCall}, Event{Kind: EventToolCall, Tool: &ToolCall{}}},
		"usage":            {Event{Kind: EventUsage, Usage: &Usage{InputTokens: 1200, OutputTokens: 345, CostUSD: 0.0123}}, Event{Kind: EventUsage, Usage: &Usage{InputTokens: 1200, OutputTokens: 345, CostUSD: 0.0123}}},
		"nil usage":        {Event{Kind: EventUsage}, Event{Kind: EventUsage, Usage: &Usage{}}},
		"heartbeat":        {Event{Kind: EventHeartbeat}, Event{Kind: EventHeartbeat}},
		"session":          {Event{Kind: EventSession, SessionID: "sess-9"}, Event{Kind: EventSession, SessionID: "sess-9"}},
		"other kind field": {Event{Kind: EventSession, SessionID: "s", Text: "dropped"}, Event{Kind: EventSession, SessionID: "s"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, err := eventToProto(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := eventFromProto(wire(t, resp))
			if !ok {
				t.Fatalf("eventFromProto(%v) is not an event", resp)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventConversionRejectsUnknown(t *testing.T) {
	t.Parallel()
	for _, kind := range []EventKind{"", "txt", "RESULT"} {
		if _, err := eventToProto(Event{Kind: kind, Text: "x"}); !errors.Is(err, sdk.ErrInvalid) {
			t.Errorf("eventToProto(kind %q) = %v, want sdk.ErrInvalid", kind, err)
		}
	}
	// Responses that are not events: none at all, an empty one, an error.
	for name, r := range map[string]*pluginv1.RunResponse{
		"nil":   nil,
		"zero":  {},
		"error": {Response: &pluginv1.RunResponse_Error{Error: &pluginv1.Error{Message: "x"}}},
	} {
		if e, ok := eventFromProto(r); ok {
			t.Errorf("eventFromProto(%s) = %+v, want no event", name, e)
		}
	}
}

func TestErrorConversion(t *testing.T) {
	t.Parallel()
	if errorToProto(nil) != nil || errorFromProto(nil) != nil {
		t.Error("nil must stay nil")
	}
	zero := errorFromProto(&pluginv1.Error{})
	if zero == nil || zero.Error() == "" || IsPermanent(zero) || sdk.Class(zero) != nil {
		t.Errorf("errorFromProto(zero) = %v, want a plain retryable error with a message", zero)
	}
	in := Permanent(sdk.Errorf(sdk.ErrPermission, "API key for %s is revoked", "anthropic"))
	want := &pluginv1.Error{Message: "API key for anthropic is revoked", Class: pluginv1.ErrorClass_ERROR_CLASS_PERMISSION, Permanent: true}
	if diff := cmp.Diff(want, errorToProto(in), protocmp.Transform()); diff != "" {
		t.Errorf("errorToProto (-want +got):\n%s", diff)
	}
	got := errorFromProto(wire(t, errorToProto(in)))
	if got.Error() != in.Error() || !IsPermanent(got) || !errors.Is(got, sdk.ErrPermission) {
		t.Errorf("round trip = %v (permanent %v, class %v)", got, IsPermanent(got), sdk.Class(got))
	}
}
