package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// testdata/schema holds the published schema of ACP protocol version 1
// (schema.v1.json, from the npm package @agentclientprotocol/sdk 2.4.0)
// and the protocol's JSON examples as the Go SDK carries them
// (github.com/coder/acp-go-sdk v0.13.0 testdata/json_golden, Apache-2.0),
// each named after the message it is an example of.

// schemaDef is the schema's definition name as a resolved schema.
func schemaDef(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("testdata/schema/schema.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var full jsonschema.Schema
	if err := json.Unmarshal(b, &full); err != nil {
		t.Fatalf("schema.v1.json: %v", err)
	}
	s := &jsonschema.Schema{Ref: "#/$defs/" + name, Defs: full.Defs}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", name, err)
	}
	return r
}

// valid checks that v, encoded as JSON, is a valid instance of def.
func valid(t *testing.T, def string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		t.Fatal(err)
	}
	if err := schemaDef(t, def).Validate(inst); err != nil {
		t.Errorf("%s is not a valid %s: %v", b, def, err)
	}
}

func vector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/schema", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The examples are valid against the schema, and each decodes into the
// type the client reads it as and encodes back to the same JSON: the
// library reads and writes what the protocol publishes.
func TestExamplesRoundTrip(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		def string
		v   any
	}{
		"initialize_request":                      {"InitializeRequest", &acpsdk.InitializeRequest{}},
		"initialize_response":                     {"InitializeResponse", &acpsdk.InitializeResponse{}},
		"new_session_request":                     {"NewSessionRequest", &acpsdk.NewSessionRequest{}},
		"new_session_response":                    {"NewSessionResponse", &acpsdk.NewSessionResponse{}},
		"prompt_request":                          {"PromptRequest", &acpsdk.PromptRequest{}},
		"cancel_notification":                     {"CancelNotification", &acpsdk.CancelNotification{}},
		"request_permission_request":              {"RequestPermissionRequest", &acpsdk.RequestPermissionRequest{}},
		"request_permission_response_selected":    {"RequestPermissionResponse", &acpsdk.RequestPermissionResponse{}},
		"permission_outcome_cancelled":            {"RequestPermissionOutcome", &acpsdk.RequestPermissionOutcome{}},
		"fs_read_text_file_request":               {"ReadTextFileRequest", &acpsdk.ReadTextFileRequest{}},
		"fs_read_text_file_response":              {"ReadTextFileResponse", &acpsdk.ReadTextFileResponse{}},
		"fs_write_text_file_request":              {"WriteTextFileRequest", &acpsdk.WriteTextFileRequest{}},
		"session_update_agent_message_chunk":      {"SessionUpdate", &acpsdk.SessionUpdate{}},
		"session_update_plan":                     {"SessionUpdate", &acpsdk.SessionUpdate{}},
		"session_update_tool_call":                {"SessionUpdate", &acpsdk.SessionUpdate{}},
		"session_update_tool_call_read":           {"SessionUpdate", &acpsdk.SessionUpdate{}},
		"session_update_tool_call_edit":           {"SessionUpdate", &acpsdk.SessionUpdate{}},
		"session_update_tool_call_update_content": {"SessionUpdate", &acpsdk.SessionUpdate{}},
	} {
		t.Run(name, func(t *testing.T) {
			raw := vector(t, name)
			var want any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := schemaDef(t, c.def).Validate(want); err != nil {
				t.Errorf("the example is not a valid %s: %v", c.def, err)
			}
			if err := json.Unmarshal(raw, c.v); err != nil {
				t.Fatalf("decode as %T: %v", c.v, err)
			}
			back, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s does not survive a round trip (-example +encoded):\n%s", name, d)
			}
		})
	}
}

// What the client sends is valid against the schema: initialize with its
// capabilities, session/new with the daemon's HTTP MCP server and an
// agent's own stdio one, the prompt, session/cancel and both answers to a
// permission request.
func TestClientMessagesAreValid(t *testing.T) {
	t.Parallel()
	valid(t, "InitializeRequest", acpsdk.InitializeRequest{ProtocolVersion: ProtocolVersion,
		ClientInfo:         &acpsdk.Implementation{Name: "agent-worker", Version: Version},
		ClientCapabilities: acpsdk.ClientCapabilities{Fs: acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}})
	s := &session{cfg: config{Command: []string{"agent"}}, out: cli.NewSender(&backendtest.Recorder{}),
		req: backend.Request{Daemon: backend.MCPServer{URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer t"}},
			MCPServers: []backend.MCPServer{{Name: "files", Command: []string{"files-mcp", "--root", "."}, Env: map[string]string{"A": "1"}}}}}
	servers, err := s.mcpServers(acpsdk.AgentCapabilities{McpCapabilities: acpsdk.McpCapabilities{Http: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Http == nil || servers[0].Http.Name != daemonServer || servers[1].Stdio == nil {
		t.Fatalf("servers %+v", servers)
	}
	valid(t, "NewSessionRequest", acpsdk.NewSessionRequest{Cwd: "/work/project", McpServers: servers})
	valid(t, "LoadSessionRequest", acpsdk.LoadSessionRequest{SessionId: "sess_1", Cwd: "/work/project", McpServers: servers})
	valid(t, "PromptRequest", acpsdk.PromptRequest{SessionId: "sess_1", Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("## System\nhi")}})
	valid(t, "CancelNotification", acpsdk.CancelNotification{SessionId: "sess_1"})
	valid(t, "RequestPermissionResponse", selected(acpsdk.PermissionOption{OptionId: "reject-once", Kind: acpsdk.PermissionOptionKindRejectOnce}))
	valid(t, "RequestPermissionResponse", cancelledOutcome())
	valid(t, "ReadTextFileResponse", acpsdk.ReadTextFileResponse{Content: "x"})
}

// The examples' session updates become the run's events: a message chunk
// is text, a tool call is a tool call named by its title, its update with
// content (still in progress) adds no result, and a plan is a log line.
func TestExampleUpdatesAsEvents(t *testing.T) {
	t.Parallel()
	rec := &backendtest.Recorder{}
	c := &client{out: cli.NewSender(rec), alive: func() {}, tools: map[acpsdk.ToolCallId]*toolState{}}
	for _, name := range []string{"session_update_agent_message_chunk", "session_update_tool_call", "session_update_tool_call_update_content", "session_update_plan"} {
		var u acpsdk.SessionUpdate
		if err := json.Unmarshal(vector(t, name), &u); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: "s", Update: u}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range rec.Events() {
		switch e.Kind {
		case backend.EventToolCall, backend.EventToolResult:
			got = append(got, string(e.Kind)+" "+e.Tool.ID+" "+e.Tool.Name)
		default:
			got = append(got, string(e.Kind)+" "+strings.SplitN(e.Text, "\n", 2)[0])
		}
	}
	want := []string{"text The capital of France is Paris.", "tool_call call_001 Reading configuration file", "log plan:"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	// Finished, the call gets its result with the update's content.
	done := acpsdk.ToolCallStatusCompleted
	if err := c.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: "s", Update: acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{
		SessionUpdate: "tool_call_update", ToolCallId: "call_001", Status: &done,
		Content: []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock("3 files"))}}}}); err != nil {
		t.Fatal(err)
	}
	last := rec.Events()[len(rec.Events())-1]
	if last.Kind != backend.EventToolResult || last.Tool.Result != "3 files" || last.Tool.Name != "Reading configuration file" {
		t.Errorf("result event %+v", last.Tool)
	}
}

// A call announced with empty arguments still streaming, as
// claude-agent-acp announces them, is reported once the update with its
// arguments arrives: one call, with them and the refined title.
func TestToolCallReportedWithItsArguments(t *testing.T) {
	t.Parallel()
	rec := &backendtest.Recorder{}
	c := &client{out: cli.NewSender(rec), alive: func() {}, tools: map[acpsdk.ToolCallId]*toolState{}}
	kind := acpsdk.ToolKindEdit
	for _, u := range []acpsdk.SessionUpdate{
		{ToolCall: &acpsdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: "toolu_1", Title: "Write", Kind: kind,
			Status: acpsdk.ToolCallStatusPending, RawInput: map[string]any{}}},
		{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: "toolu_1", Title: acpsdk.Ptr("Write main.go"), Kind: &kind,
			RawInput: map[string]any{"file_path": "/w/main.go", "content": "package main\n"}}},
	} {
		if err := c.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: "s", Update: u}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range rec.Events() {
		got = append(got, string(e.Kind)+" "+e.Tool.Name+" "+string(e.Tool.Args))
	}
	want := []string{`tool_call Write main.go {"content":"package main\n","file_path":"/w/main.go"}`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// The example permission request (a call without kind or title) goes to
// the gate as a call named "tool" and, refused, gets the reject option.
func TestExamplePermissionRefused(t *testing.T) {
	t.Parallel()
	var p acpsdk.RequestPermissionRequest
	if err := json.Unmarshal(vector(t, "request_permission_request"), &p); err != nil {
		t.Fatal(err)
	}
	rec := &backendtest.Recorder{}
	var asked tools.GateCall
	c := &client{out: cli.NewSender(rec), alive: func() {}, cancelled: make(chan struct{}),
		gate: gateFunc(func(call tools.GateCall) tools.GateDecision {
			asked = call
			return tools.GateDecision{Reason: "not in this phase"}
		})}
	resp, err := c.RequestPermission(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "reject-once" || asked.Tool != "tool" {
		t.Errorf("outcome %+v for %+v", resp.Outcome, asked)
	}
	valid(t, "RequestPermissionResponse", resp)

	// A person's denial under the approvals refuses a call the gate allows.
	c.gate = gateFunc(func(tools.GateCall) tools.GateDecision { return tools.GateDecision{Allowed: true} })
	c.approvals = &backend.ApprovalPolicy{Shell: []string{"rm -rf *"}}
	c.approve = func(context.Context, string) (string, error) { return "denied by ann: not today", nil }
	kind := acpsdk.ToolKindExecute
	p.ToolCall.Kind, p.ToolCall.RawInput = &kind, map[string]any{"command": "rm -rf build"}
	resp, err = c.RequestPermission(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "reject-once" {
		t.Errorf("a denied approval answered %+v", resp.Outcome)
	}
	if g := rec.Events()[len(rec.Events())-1]; g.Kind != backend.EventGate || g.Text != "shell: denied by ann: not today" {
		t.Errorf("last event %+v", g)
	}
}

// gateFunc adapts a function to the gate.
type gateFunc func(tools.GateCall) tools.GateDecision

func (f gateFunc) Gate(_ context.Context, c tools.GateCall) tools.GateDecision { return f(c) }
