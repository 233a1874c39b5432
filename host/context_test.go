package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/store"
)

// A run's prompt holds its inbox, the channel's tail, notes.md and the
// team's documents, and the run asked the daemon for none of them: its
// only MCP tool call is the reply its script makes.
func TestRunPromptComesWithTheRequest(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx, c := context.Background(), th.client()
	scope := api.Target{Workflow: "global", Tag: "main"}
	scriptedAgent(t, th, "alice", "", "", map[string]any{"reply": "on it"}, map[string]any{"result": "done"})
	if _, err := c.Send(ctx, api.SendRequest{Target: "@global", Message: "earlier chatter nobody was mentioned in"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DocWrite(ctx, scope, "notes.md", api.DocumentWrite{Content: "# Plan\n- ship on Friday\n"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DocWrite(ctx, scope, "specs/api.md", api.DocumentWrite{Content: "GET /things\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Serve(ctx, api.RunRequest{Agent: "alice", Message: "please review the plan"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var prompt string
	for _, e := range d.Events {
		var log struct{ Text string }
		if e.Kind == "log" && json.Unmarshal(e.Data, &log) == nil && strings.Contains(log.Text, "## Inbox") {
			prompt = log.Text
			break
		}
	}
	for _, want := range []string{
		"## Inbox (1 message for you)", "From user: @alice please review the plan", // the inbox
		"From user: earlier chatter nobody was mentioned in", // the channel's tail
		"- ship on Friday", "specs/api.md (12 bytes)", // notes.md and the document list
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the run's prompt lacks %q:\n%s", want, prompt)
		}
	}
	calls := map[string]float64{}
	for series, v := range scrape(t, th) {
		if tool, ok := strings.CutPrefix(series, `agent_worker_mcp_tool_calls_total{outcome="ok",tool="`); ok {
			calls[strings.TrimSuffix(tool, `"}`)] = v
		}
	}
	if diff := cmp.Diff(map[string]float64{"channel_send": 1}, calls); diff != "" {
		t.Errorf("MCP tool calls (-want +got); the run's context came with its request:\n%s", diff)
	}
}

// The context a run is sent is what the tools answer: my_inbox (cut at the
// newest message the run acks), channel_read, team_doc_read and
// team_doc_list, field for field.
func TestRunContextIsWhatTheToolsShow(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	ctx := context.Background()
	alice, bob := th.join(t, "alice"), th.join(t, "bob")
	for _, m := range []string{"@alice first", "chatter", "@alice second"} {
		bob.ok("channel_send", map[string]any{"message": m})
	}
	bob.ok("channel_send", map[string]any{"message": "between us", "to": "alice"})
	alice.ok("channel_send", map[string]any{"message": "@bob noted"})
	alice.ok("team_doc_write", map[string]any{"content": "# Notes\n"})
	alice.ok("team_doc_create", map[string]any{"file": "plan.md", "content": "step one\n"})

	key := store.AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	inbox, err := th.DB().Inbox(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := th.mcp.RunContext(ctx, key, inbox, inbox[len(inbox)-1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, got any, tool string, args map[string]any, field string) {
		t.Helper()
		want := alice.ok(tool, args)[field]
		var g any
		b, _ := json.Marshal(got)
		_ = json.Unmarshal(b, &g)
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("%s differs from %s's %s (-tool +context):\n%s", what, tool, field, diff)
		}
	}
	same("the inbox", rc.Inbox.Messages, "my_inbox", nil, "messages")
	same("the inbox's newest seq", rc.Inbox.NewestSeq, "my_inbox", nil, "newest_seq")
	same("the channel tail", rc.Recent, "channel_read", map[string]any{"limit": 50}, "messages")
	same("notes.md", rc.Notes, "team_doc_read", nil, "content")
	same("the document list", rc.Documents, "team_doc_list", nil, "documents")
	if len(rc.Inbox.Messages) != 3 || len(rc.Recent) != 5 || len(rc.Documents) != 2 {
		t.Errorf("context = %d inbox, %d recent, %d documents; want 3, 5, 2", len(rc.Inbox.Messages), len(rc.Recent), len(rc.Documents))
	}

	// A run is never shown messages past the newest it acks.
	rc, err = th.mcp.RunContext(ctx, key, inbox, inbox[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Inbox.Messages) != 1 || rc.Inbox.NewestSeq != inbox[0].Seq || rc.Inbox.Count != 1 {
		t.Errorf("inbox until #%d = %+v, want only that message", inbox[0].Seq, rc.Inbox)
	}
}
