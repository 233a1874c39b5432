package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// bearer adds an agent token to every MCP request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// agentSession is a real MCP client over HTTP acting as one agent.
type agentSession struct {
	t    testing.TB
	name string
	sess *mcp.ClientSession
}

// join registers an agent (if needed), mints its token through the HTTP API
// and opens an MCP session with it.
func (th *testHost) join(t testing.TB, target string) *agentSession {
	t.Helper()
	ctx := context.Background()
	tg, err := api.ParseAgentTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	c := th.client()
	if _, err := c.GetAgent(ctx, tg); api.ErrorCode(err) == api.CodeNotFound {
		if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: tg.Agent, Workflow: tg.Workflow, Tag: tg.Tag, Backend: "external"}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := c.MCPConfig(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	return connectMCP(t, cfg.URL, cfg.Token, tg.Agent)
}

func connectMCP(t testing.TB, url, token, name string) *agentSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-" + name, Version: "1"}, nil)
	// A transport of its own: httptest.Server.Close of a parallel test
	// closes http.DefaultTransport's idle connections, the session's too.
	own := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(own.CloseIdleConnections)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, own}}, DisableStandaloneSSE: true}
	sess, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect MCP as %s: %v", name, err)
	}
	t.Cleanup(func() { sess.Close() })
	return &agentSession{t: t, name: name, sess: sess}
}

// call invokes a tool; it returns the structured result (decoded into a
// generic map), the text and whether it was a tool error.
func (a *agentSession) call(tool string, args map[string]any) (map[string]any, string, bool) {
	a.t.Helper()
	res, err := a.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("%s %s: protocol error %v", a.name, tool, err)
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	out := map[string]any{}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return out, text, res.IsError
}

// ok calls a tool that must succeed.
func (a *agentSession) ok(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	out, text, isErr := a.call(tool, args)
	if isErr {
		a.t.Fatalf("%s %s(%v): tool error %q", a.name, tool, args, text)
	}
	return out
}

// fails calls a tool that must fail with an error saying says.
func (a *agentSession) fails(tool string, args map[string]any, says string) {
	a.t.Helper()
	_, text, isErr := a.call(tool, args)
	if !isErr || !strings.Contains(text, says) {
		a.t.Errorf("%s %s(%v) = error %v %q; want a tool error saying %q", a.name, tool, args, isErr, text, says)
	}
}

func (a *agentSession) inbox() []any {
	a.t.Helper()
	msgs, _ := a.ok("my_inbox", nil)["messages"].([]any)
	return msgs
}

func field(v any, key string) any { return v.(map[string]any)[key] }

// The seed's step-2 check through a real MCP client over HTTP.
func TestMCPStep2MentionInboxAck(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	wakes := th.team.Bus.Subscribe(16)
	defer wakes.Close()
	alice, bob := th.join(t, "alice"), th.join(t, "bob")

	sent := alice.ok("channel_send", map[string]any{"message": "@bob please review"})
	if diff := cmp.Diff([]any{"bob"}, sent["mentions"]); diff != "" {
		t.Errorf("mentions (-want +got):\n%s", diff)
	}
	// The send woke bob: observable on the bus the scheduler will consume.
	for ev := range wakes.C {
		if ev.Kind == team.EventWake {
			if ev.Agent != (store.AgentKey{Name: "bob", Workflow: "global", Tag: "main"}) {
				t.Errorf("wake for %v, want bob", ev.Agent)
			}
			break
		}
	}
	in := bob.inbox()
	if len(in) != 1 || field(in[0], "content") != "@bob please review" || field(in[0], "from") != "alice" {
		t.Fatalf("bob's inbox = %v", in)
	}
	if got := alice.inbox(); len(got) != 0 {
		t.Errorf("alice's inbox = %v, want empty (own message)", got)
	}
	if n := len(bob.inbox()); n != 1 {
		t.Errorf("reading the inbox acked it: %d left", n)
	}
	newest := bob.ok("my_inbox", nil)["newest_seq"]
	bob.fails("my_inbox_ack", map[string]any{"until_seq": newest.(float64) + 5}, "beyond")
	bob.ok("my_inbox_ack", map[string]any{"until_seq": newest})
	if got := bob.inbox(); len(got) != 0 {
		t.Errorf("bob's inbox after ack = %v", got)
	}
	ms, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Content != "@bob please review" || !cmp.Equal(ms[0].Mentions, []string{"bob"}) || ms[0].From != "alice" {
		t.Errorf("peek = %+v", ms)
	}
}

func TestMCPAuth(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	mcpURL := th.url("/mcp")
	post := func(auth string) int {
		req, _ := http.NewRequest("POST", mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	alice := th.join(t, "alice")
	cfg, err := th.client().MCPConfig(context.Background(), api.Target{Agent: "alice", Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range map[string]string{
		"none": "", "unknown": "Bearer awt_" + strings.Repeat("0", 64), "daemon token": "Bearer " + th.Token(),
		"agent query param": "", "scheme": "Token " + cfg.Token,
	} {
		if got := post(auth); got != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, got)
		}
	}
	if got := post("Bearer " + cfg.Token); got != http.StatusOK {
		t.Errorf("valid token: status %d, want 200", got)
	}
	// A revoked token stops working at once, even for an open session.
	if err := th.DB().RevokeToken(context.Background(), cfg.Token); err != nil {
		t.Fatal(err)
	}
	if got := post("Bearer " + cfg.Token); got != http.StatusUnauthorized {
		t.Errorf("revoked token: status %d, want 401", got)
	}
	alice.ok("team_members", nil) // the first session's own token still works
	// Deleting the agent kills its tokens.
	if err := th.client().DeleteAgent(context.Background(), api.Target{Agent: "alice", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "team_members"}); err == nil {
		t.Errorf("deleted agent's session still works")
	}
}

func TestMCPSessionBoundToItsAgent(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice := th.join(t, "alice")
	th.join(t, "bob")
	bobCfg, err := th.client().MCPConfig(context.Background(), api.Target{Agent: "bob", Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	// Bob replays alice's session id with his own token.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"channel_send","arguments":{"message":"I am alice"}}}`
	req, _ := http.NewRequest("POST", th.url("/mcp"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bobCfg.Token)
	req.Header.Set("Mcp-Session-Id", alice.sess.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ms, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Content == "I am alice" {
			t.Errorf("bob posted as %s through alice's session", m.From)
		}
	}
}

func TestMCPChannelRules(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, bob, carol := th.join(t, "alice@team"), th.join(t, "bob@team"), th.join(t, "carol@team")

	// @all reaches everyone but the sender; an email address is not a mention.
	alice.ok("channel_send", map[string]any{"message": "@all standup; mail bob@example.com"})
	if len(alice.inbox()) != 0 || len(bob.inbox()) != 1 || len(carol.inbox()) != 1 {
		t.Errorf("@all inboxes: alice %d bob %d carol %d; want 0 1 1", len(alice.inbox()), len(bob.inbox()), len(carol.inbox()))
	}
	sent := alice.ok("channel_send", map[string]any{"message": "only for bob@example.com readers"})
	if m, _ := sent["mentions"].([]any); len(m) != 0 {
		t.Errorf("bob@example.com counted as a mention: %v", sent)
	}

	// A DM is seen by its two parties only; the human operator sees it, marked.
	alice.ok("channel_send", map[string]any{"message": "secret plan", "to": "bob"})
	seen := func(s *agentSession) bool {
		out := s.ok("channel_read", map[string]any{"limit": 50})
		for _, m := range out["messages"].([]any) {
			if field(m, "content") == "secret plan" {
				return true
			}
		}
		return false
	}
	if !seen(alice) || !seen(bob) || seen(carol) {
		t.Errorf("DM visibility: alice %v bob %v carol %v; want true true false", seen(alice), seen(bob), seen(carol))
	}
	peek := func(target string) []api.Message {
		ms, err := th.client().Peek(context.Background(), target, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	hasDM := func(ms []api.Message) bool {
		for _, m := range ms {
			if m.Content == "secret plan" {
				return m.To == "bob"
			}
		}
		return false
	}
	if hasDM(peek("carol@team")) || !hasDM(peek("bob@team")) || !hasDM(peek("@team")) {
		t.Errorf("peek DM visibility wrong: carol sees %v, bob %v, human %v", hasDM(peek("carol@team")), hasDM(peek("bob@team")), hasDM(peek("@team")))
	}
	if in := bob.inbox(); len(in) != 2 || field(in[1], "to") != "bob" {
		t.Errorf("bob's inbox after DM = %v", in)
	}
	if len(carol.inbox()) != 1 {
		t.Errorf("carol got the DM in her inbox")
	}

	// Long content becomes a resource; the stub keeps the mentions.
	long := strings.Repeat("A", team.DefaultLongMessageChars+1)
	out := alice.ok("channel_send", map[string]any{"message": "@carol " + long})
	id, _ := out["resource_id"].(string)
	if !strings.HasPrefix(id, "res_") {
		t.Fatalf("long message not stored as a resource: %v", out)
	}
	in := carol.inbox()
	stub := field(in[len(in)-1], "content").(string)
	if !strings.HasPrefix(stub, "@carol ") || !strings.Contains(stub, `resource_read("`+id+`")`) || len(stub) > 300 {
		t.Errorf("stub = %q", stub)
	}
	if r := carol.ok("resource_read", map[string]any{"id": id}); r["content"] != "@carol "+long {
		t.Errorf("resource content differs (len %d)", len(fmt.Sprint(r["content"])))
	}
	exactly := strings.Repeat("B", team.DefaultLongMessageChars)
	if out := alice.ok("channel_send", map[string]any{"message": exactly}); out["resource_id"] != nil {
		t.Errorf("a message of exactly the limit became a resource")
	}
	alice.fails("channel_send", map[string]any{"message": strings.Repeat("x", team.DefaultMaxMessageChars+1)}, "the limit is")
}

func TestMCPBadInputs(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice := th.join(t, "alice@wf")
	th.join(t, "bob@wf")
	tests := []struct {
		tool string
		args map[string]any
		says string
	}{
		{"channel_send", map[string]any{}, "message"},
		{"channel_send", map[string]any{"message": "hi", "extra": 1}, "extra"},
		{"channel_send", map[string]any{"message": 42}, "message"},
		{"channel_send", map[string]any{"message": "   "}, "empty"},
		{"channel_send", map[string]any{"message": "a\x00b"}, "NUL byte"},
		{"channel_send", map[string]any{"message": "hi", "to": "nobody"}, "not a member"},
		{"channel_send", map[string]any{"message": "hi", "to": "alice"}, "yourself"},
		{"channel_read", map[string]any{"limit": 500}, "between 1 and 200"},
		{"channel_read", map[string]any{"since_seq": -1}, ">= 0"},
		{"channel_read", map[string]any{"since_seq": "x"}, "since_seq"},
		{"my_inbox_ack", map[string]any{}, "until_seq"},
		{"my_inbox_ack", map[string]any{"until_seq": 999}, "no messages to ack"},
		{"my_status_set", map[string]any{}, "give state, task or both"},
		{"my_status_set", map[string]any{"task": strings.Repeat("t", 500)}, "200"},
		{"team_doc_read", map[string]any{"file": "../secret.md"}, ".."},
		{"team_doc_read", map[string]any{"file": "/etc/passwd"}, "relative"},
		{"team_doc_write", map[string]any{"file": "x.exe", "content": "a"}, ".md"},
		{"team_doc_write", map[string]any{"file": "notes.md"}, "content"},
		{"team_doc_create", map[string]any{"content": "a"}, "file"},
		{"team_doc_read", map[string]any{"file": "missing.md"}, "not"},
		{"team_proposal_create", map[string]any{"type": "poll", "title": "x"}, "election"},
		{"team_proposal_create", map[string]any{"type": "decision", "title": "x"}, "option"},
		{"team_proposal_create", map[string]any{"type": "approval", "title": "x", "expires_in": "soon"}, "duration"},
		{"team_vote", map[string]any{"proposal": "prop-999", "choice": "a"}, "not found"},
		{"team_proposal_status", map[string]any{"proposal": "prop-999"}, "not found"},
		{"team_proposal_cancel", map[string]any{"proposal": "prop-999"}, "not found"},
		{"resource_read", map[string]any{"id": "res_0000000000000000"}, "not found"},
		{"resource_read", map[string]any{"id": "../x"}, "res_"},
		{"resource_create", map[string]any{"content": "{", "type": "json"}, "JSON"},
		{"resource_create", map[string]any{"content": "x", "type": "pdf"}, "markdown"},
	}
	for _, tc := range tests {
		alice.fails(tc.tool, tc.args, tc.says)
	}
	// Nothing the refused calls tried was written.
	ms, err := th.client().Peek(context.Background(), "@wf", 50, 0)
	if err != nil || len(ms) != 0 {
		t.Errorf("channel after refused calls = %+v, %v; want empty", ms, err)
	}
}

func TestMCPStatusAndMembers(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice := th.join(t, "alice@wf")
	th.join(t, "bob@wf")
	th.join(t, "zed@other") // another workflow: not a member
	alice.ok("my_status_set", map[string]any{"state": "working", "task": "review PR 7"})
	out := alice.ok("team_members", nil)
	want := []any{
		map[string]any{"name": "alice", "backend": "external", "state": "idle", "status": "working", "task": "review PR 7", "you": true},
		map[string]any{"name": "bob", "backend": "external", "state": "idle", "you": false},
	}
	if diff := cmp.Diff(want, out["members"]); diff != "" {
		t.Errorf("team_members (-want +got):\n%s", diff)
	}
}

func TestMCPDocuments(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th := startHost(t, home)
	alice := th.join(t, "alice")
	if got := alice.ok("team_doc_read", nil); got["content"] != "" {
		t.Errorf("fresh notes.md = %v", got)
	}
	alice.ok("team_doc_write", map[string]any{"content": "# Plan\n"})
	alice.ok("team_doc_append", map[string]any{"content": "- step 1\n"})
	alice.ok("team_doc_create", map[string]any{"file": "specs/api.md", "content": "GET /x"})
	alice.fails("team_doc_create", map[string]any{"file": "specs/api.md", "content": "again"}, "already exists")
	// Documents are real files the user can open.
	b, err := os.ReadFile(filepath.Join(home, ".workflow", "global", "main", "documents", "notes.md"))
	if err != nil || string(b) != "# Plan\n- step 1\n" {
		t.Errorf("notes.md on disk = %q, %v", b, err)
	}
	list := alice.ok("team_doc_list", nil)
	if list["count"] != float64(2) {
		t.Errorf("team_doc_list = %v", list)
	}
	// A symlink in the documents dir pointing outside cannot be followed.
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home, ".workflow", "global", "main", "documents", "leak.md")); err != nil {
		t.Fatal(err)
	}
	alice.fails("team_doc_read", map[string]any{"file": "leak.md"}, "")
	_, text, isErr := alice.call("team_doc_write", map[string]any{"file": "leak.md", "content": "pwned"})
	if b, err := os.ReadFile(outside); err != nil || !isErr || string(b) != "secret" {
		t.Errorf("write through symlink: error %v %q, outside file now %q, %v", isErr, text, b, err)
	}

	// documentOwner: only the owner changes documents; the error names them.
	ctx := context.Background()
	if _, err := th.DB().CreateWorkflow(ctx, store.Workflow{Name: "review", Tag: "main", Workdir: t.TempDir(), DocsOwner: "lead"}); err != nil {
		t.Fatal(err)
	}
	lead, dev := th.join(t, "lead@review"), th.join(t, "dev@review")
	lead.ok("team_doc_write", map[string]any{"content": "owned"})
	dev.fails("team_doc_write", map[string]any{"content": "mine now"}, "only lead")
	dev.fails("team_doc_append", map[string]any{"content": "more"}, "only lead")
	dev.fails("team_doc_create", map[string]any{"file": "x.md", "content": "x"}, "only lead")
	if got := dev.ok("team_doc_read", nil); got["content"] != "owned" {
		t.Errorf("non-owner read = %v", got)
	}
}

func TestMCPProposals(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	a, b, c := th.join(t, "a@vote"), th.join(t, "b@vote"), th.join(t, "c@vote")
	p := a.ok("team_proposal_create", map[string]any{"type": "decision", "title": "Pick a DB", "options": []string{"postgres", "sqlite"}})
	id := p["id"].(string)
	if !strings.HasPrefix(id, "prop-") || p["quorum"] != float64(3) {
		t.Fatalf("created %v", p)
	}
	if len(b.inbox()) != 1 || len(c.inbox()) != 1 || len(a.inbox()) != 0 {
		t.Errorf("creation line did not reach the other members")
	}
	a.ok("team_vote", map[string]any{"proposal": id, "choice": "postgres"})
	b.ok("team_vote", map[string]any{"proposal": id, "choice": "sqlite", "reason": "simple"})
	b.ok("team_vote", map[string]any{"proposal": id, "choice": "Postgres"}) // replaces, case-insensitive
	b.fails("team_vote", map[string]any{"proposal": id, "choice": "mysql"}, "postgres")
	st := c.ok("team_proposal_status", map[string]any{"proposal": id})
	if ps := st["proposals"].([]any); field(ps[0], "state") != "active" || len(field(ps[0], "votes").([]any)) != 2 {
		t.Errorf("status before quorum = %v", st)
	}
	res := c.ok("team_vote", map[string]any{"proposal": id, "choice": "sqlite"})
	if res["state"] != "resolved" || res["winner"] != "postgres" {
		t.Errorf("after quorum = %v", res)
	}
	c.fails("team_vote", map[string]any{"proposal": id, "choice": "sqlite"}, "resolved")
	a.fails("team_proposal_cancel", map[string]any{"proposal": id}, "resolved")

	q := a.ok("team_proposal_create", map[string]any{"type": "approval", "title": "Ship it?"})
	if diff := cmp.Diff([]any{"approve", "reject"}, q["options"]); diff != "" {
		t.Errorf("approval options (-want +got):\n%s", diff)
	}
	b.fails("team_proposal_cancel", map[string]any{"proposal": q["id"]}, "only a")
	if got := a.ok("team_proposal_cancel", map[string]any{"proposal": q["id"]}); got["state"] != "cancelled" {
		t.Errorf("cancel = %v", got)
	}
	if st := a.ok("team_proposal_status", nil); st["count"] != float64(0) {
		t.Errorf("active proposals after resolve and cancel = %v", st)
	}
	// Isolation: another tag cannot see or vote on it.
	other := th.join(t, "a@vote:other")
	other.fails("team_vote", map[string]any{"proposal": id, "choice": "sqlite"}, "not found")
}

func TestMCPTagsShareNothing(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	one, two := th.join(t, "alice@wf:one"), th.join(t, "alice@wf:two")
	th.join(t, "bob@wf:one")
	th.join(t, "bob@wf:two")
	one.ok("channel_send", map[string]any{"message": "@bob in one"})
	one.ok("team_doc_write", map[string]any{"content": "one's notes"})
	res := one.ok("resource_create", map[string]any{"content": "one's data"})
	if got := two.ok("channel_read", nil); got["count"] != float64(0) {
		t.Errorf("tag two sees tag one's channel: %v", got)
	}
	if got := two.ok("team_doc_read", nil); got["content"] != "" {
		t.Errorf("tag two sees tag one's notes: %v", got)
	}
	two.fails("resource_read", map[string]any{"id": res["id"]}, "not found")
	bobTwo := th.join(t, "bob@wf:two")
	if len(bobTwo.inbox()) != 0 {
		t.Errorf("bob@wf:two got tag one's mention")
	}
}

// 50 agents × 200 channel_send each through MCP over HTTP, concurrently.
func TestMCPConcurrentSends(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skips the 10,000-message concurrency test")
	}
	th := startHost(t, t.TempDir())
	const agents, each = 50, 200
	sessions := make([]*agentSession, agents)
	for i := range sessions {
		sessions[i] = th.join(t, fmt.Sprintf("a%02d@load", i))
	}
	want := make([]int, agents) // inbox count per agent
	var wg sync.WaitGroup
	for i, s := range sessions {
		for j := range each {
			want[(i+1+j%(agents-1))%agents]++ // never the sender
		}
		wg.Go(func() {
			for j := range each {
				to := (i + 1 + j%(agents-1)) % agents
				res, err := s.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send",
					Arguments: map[string]any{"message": fmt.Sprintf("@a%02d msg %d from %d", to, j, i)}})
				if err != nil || res.IsError {
					t.Errorf("send %d/%d: %v %+v", i, j, err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	scope := store.Scope{Workflow: "load", Tag: "main"}
	if latest, err := th.DB().LatestSeq(context.Background(), scope); err != nil || latest != agents*each {
		t.Errorf("latest seq %d, %v; want %d", latest, err, agents*each)
	}
	counts, err := th.DB().Counts(context.Background())
	if err != nil || counts.Messages != agents*each {
		t.Errorf("%d messages stored (%v), want %d", counts.Messages, err, agents*each)
	}
	// Page forward from seq 1 (since_seq 0 means "the newest"): with the
	// count above, seqs 2..N arriving in order with no gap proves 1..N.
	since, total := int64(1), 1
	for {
		ms, err := th.DB().ReadChannel(context.Background(), scope, store.ReadOptions{SinceSeq: since, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if m.Seq != since+1 {
				t.Fatalf("seq %d after %d: duplicate or gap", m.Seq, since)
			}
			since = m.Seq
			total++
		}
	}
	if total != agents*each {
		t.Errorf("%d messages stored, want %d", total, agents*each)
	}
	for i := range agents {
		n, err := th.DB().InboxDepth(context.Background(), store.AgentKey{Name: fmt.Sprintf("a%02d", i), Workflow: "load", Tag: "main"})
		if err != nil || n != want[i] {
			t.Errorf("a%02d inbox = %d, %v; want %d", i, n, err, want[i])
		}
	}
}

// The daemon closes an expired proposal on its own: nobody reads or votes.
func TestProposalExpiresWithoutBeingTouched(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	events := th.team.Bus.Subscribe(64)
	defer events.Close()
	a, b := th.join(t, "a@exp"), th.join(t, "b@exp")
	p := a.ok("team_proposal_create", map[string]any{"type": "approval", "title": "quick", "expires_in": "1s"})
	b.ok("team_vote", map[string]any{"proposal": p["id"], "choice": "approve"})
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events.C:
			if ev.Kind == team.EventMessage && strings.Contains(ev.Message.Content, "expired") {
				if !strings.Contains(ev.Message.Content, `"approve" wins`) {
					t.Errorf("expiry line = %q", ev.Message.Content)
				}
				got, err := th.DB().GetProposal(context.Background(), store.Scope{Workflow: "exp", Tag: "main"}, p["id"].(string), team.Lines{})
				if err != nil || got.State != "expired" || got.Winner != "approve" || got.ResolvedBy != "timeout" {
					t.Errorf("after expiry: %+v, %v", got, err)
				}
				return
			}
		case <-deadline:
			t.Fatal("proposal never expired")
		}
	}
}

// The daemon offers exactly the tools of the sdk's contract, each with an
// input schema and a description for the model.
func TestMCPToolsMatchTheContract(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	a := th.join(t, "alice")
	res, err := a.sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tl.Name)
		}
	}
	want := append([]string(nil), tools.Names...)
	sort.Strings(want)
	sort.Strings(names)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-contract +daemon):\n%s", diff)
	}
}

// Stopping a workflow, or removing an agent from its file, ends the tokens
// minted for its agents with mcp-config: an open session stops working, a
// new one is refused with 401, and no new token is minted until the
// workflow runs again.
func TestStoppedWorkflowRevokesAgentTokens(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "team.yaml")
	saveFile(t, file, teamV1)
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	aliceT := api.Target{Agent: "alice", Workflow: "team", Tag: "main"}
	bobT := api.Target{Agent: "bob", Workflow: "team", Tag: "main"}
	mint := func(tg api.Target) api.MCPConfig {
		t.Helper()
		cfg, err := th.client().MCPConfig(ctx, tg)
		if err != nil {
			t.Fatalf("mcp-config %s: %v", tg, err)
		}
		return cfg
	}
	aliceCfg, bobCfg := mint(aliceT), mint(bobT)
	alice := connectMCP(t, aliceCfg.URL, aliceCfg.Token, "alice")
	bob := connectMCP(t, bobCfg.URL, bobCfg.Token, "bob")
	alice.ok("channel_send", map[string]any{"message": "alice is here"})
	bob.ok("channel_send", map[string]any{"message": "bob is here"})

	refused := func(who string, s *agentSession, cfg api.MCPConfig) {
		t.Helper()
		if _, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": who + " still posting"}}); err == nil {
			t.Errorf("%s's open session still posts after the stop", who)
		}
		if got := initializeStatus(t, cfg.URL, cfg.Token); got != http.StatusUnauthorized {
			t.Errorf("%s's old token opens a new MCP session: status %d, want 401", who, got)
		}
		if _, err := th.client().MCPConfig(ctx, api.Target{Agent: who, Workflow: "team", Tag: "main"}); api.ErrorCode(err) != api.CodeConflict ||
			!strings.Contains(err.Error(), "stopped") {
			t.Errorf("mcp-config %s while stopped: %v; want a conflict saying it is stopped", who, err)
		}
	}

	// A reload that drops bob ends his tokens; alice's keep working.
	saveFile(t, file, "name: team\nagents:\n  alice:\n    backend: mock\n    system_prompt: You are alice, version one.\n")
	waitWorkflow(t, th, api.Target{Workflow: "team", Tag: "main"}, "bob stopped", func(_ api.Workflow, as []api.Agent) bool {
		b := agentIn(as, "bob")
		return b != nil && b.State == "stopped"
	})
	refused("bob", bob, bobCfg)
	alice.ok("channel_send", map[string]any{"message": "alice after the reload"})

	// Stopping the workflow ends alice's too.
	if err := th.client().StopWorkflow(ctx, api.Target{Workflow: "team", Tag: "main"}, false); err != nil {
		t.Fatal(err)
	}
	refused("alice", alice, aliceCfg)
	msgs, err := th.client().Peek(ctx, "@team", 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, "still posting") {
			t.Errorf("a revoked token posted %q", m.Content)
		}
	}

	// Started again, the workflow's agents need new tokens; the old stay dead.
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	fresh := mint(aliceT)
	connectMCP(t, fresh.URL, fresh.Token, "alice").ok("channel_send", map[string]any{"message": "alice is back"})
	if got := initializeStatus(t, aliceCfg.URL, aliceCfg.Token); got != http.StatusUnauthorized {
		t.Errorf("alice's pre-stop token works again after the restart: status %d", got)
	}
}

// initializeStatus sends an MCP initialize with token and returns the HTTP
// status.
func initializeStatus(t testing.TB, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
