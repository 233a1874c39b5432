package worker_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/internal/sdktest"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// connect opens a client for agent on d.
func connect(t *testing.T, d *backendtest.Daemon, agent string) (*worker.Client, backend.Request) {
	t.Helper()
	req := d.Request(agent)
	c, err := worker.Connect(t.Context(), req.Daemon)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, req
}

func TestConnectNeedsTheToken(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	for name, hdr := range map[string]map[string]string{
		"none":  nil,
		"wrong": {"Authorization": "Bearer nope"},
	} {
		req.Daemon.Headers = hdr
		if c, err := worker.Connect(t.Context(), req.Daemon); err == nil {
			c.Close()
			t.Errorf("%s token: Connect succeeded, want an error", name)
		}
	}
}

// closedURL is an MCP URL on a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	return "http://" + sdktest.FreeAddr(t) + "/mcp"
}

func TestConnectUnreachableFailsFast(t *testing.T) {
	t.Parallel()
	url := closedURL(t)
	begin := time.Now()
	if _, err := worker.Connect(t.Context(), backend.MCPServer{URL: url}); err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Connect to a closed port took %v", d)
	}
	if _, err := worker.Connect(t.Context(), backend.MCPServer{}); err == nil {
		t.Error("Connect without a URL succeeded")
	}
}

func TestInboxReadAck(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, _ := connect(t, d, "alice")
	d.Post("user", "@alice first")
	d.Post("bob", "not for alice")
	d.DM("bob", "alice", "psst")
	d.DM("bob", "carol", "secret")

	inbox, err := c.Inbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user:@alice first", "bob:psst"}, lines(inbox)); diff != "" {
		t.Errorf("Inbox (-want +got):\n%s", diff)
	}
	if c.NewestSeq() != 3 {
		t.Errorf("NewestSeq = %d, want 3", c.NewestSeq())
	}
	if inbox[1].To != "alice" || inbox[0].Seq != 1 || inbox[0].CreatedAt.IsZero() {
		t.Errorf("messages lost fields: %+v", inbox)
	}

	all, err := c.Read(t.Context(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user:@alice first", "bob:not for alice", "bob:psst"}, lines(all)); diff != "" {
		t.Errorf("Read hides DMs to others (-want +got):\n%s", diff)
	}
	page, err := c.Read(t.Context(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bob:not for alice"}, lines(page)); diff != "" {
		t.Errorf("Read(since 1, limit 1) (-want +got):\n%s", diff)
	}

	if err := c.Ack(t.Context(), c.NewestSeq()); err != nil {
		t.Fatal(err)
	}
	if got := d.Cursor("alice"); got != 3 {
		t.Errorf("cursor after Ack = %d, want 3", got)
	}
	if inbox, err := c.Inbox(t.Context()); err != nil || len(inbox) != 0 || c.NewestSeq() != 0 {
		t.Errorf("Inbox after Ack = %v (newest %d), %v; want empty", inbox, c.NewestSeq(), err)
	}
}

func lines(ms []worker.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.From+":"+m.Content)
	}
	return out
}

func TestSend(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, _ := connect(t, d, "alice")
	d.Request("bob")

	res, err := c.Send(t.Context(), "hi @bob and bob@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(worker.SendResult{Seq: 1, ID: "msg_1", Mentions: []string{"bob"}}, res); diff != "" {
		t.Errorf("Send (-want +got):\n%s", diff)
	}
	res, err = c.Send(t.Context(), "just you", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if res.To != "bob" || res.Seq != 2 {
		t.Errorf("DM result = %+v", res)
	}
	if ms := d.Messages(); len(ms) != 2 || ms[1].To != "bob" || ms[0].From != "alice" {
		t.Errorf("daemon holds %+v", ms)
	}

	_, err = c.Send(t.Context(), "  ", "")
	var te *worker.ToolError
	if !errors.As(err, &te) || te.Tool != "channel_send" || err.Error() != "message is empty: write something" {
		t.Errorf("empty Send = %#v, want the tool's message as a ToolError", err)
	}
}

func TestStatusAndMembers(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, _ := connect(t, d, "alice")
	d.Request("bob")
	if err := c.SetStatus(t.Context(), "working", "the report"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(t.Context(), "", ""); err == nil {
		t.Error("SetStatus with nothing succeeded")
	}
	ms, err := c.Members(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []worker.Member{
		{Name: "alice", Backend: "fake", State: "idle", Status: "working", Task: "the report", You: true},
		{Name: "bob", Backend: "fake", State: "idle"},
	}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
}

func TestDocuments(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.SetClock(func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) })
	c, _ := connect(t, d, "alice")
	ctx := t.Context()

	if got, err := c.DocRead(ctx, ""); err != nil || got != "" {
		t.Errorf("unwritten notes.md = %q, %v; want empty", got, err)
	}
	if err := c.DocWrite(ctx, "", "a\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.DocAppend(ctx, "", "b\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.DocRead(ctx, "notes.md"); err != nil || got != "a\nb\n" {
		t.Errorf("notes.md = %q, %v", got, err)
	}
	if err := c.DocCreate(ctx, "plan.md", "p"); err != nil {
		t.Fatal(err)
	}
	if err := c.DocCreate(ctx, "plan.md", "again"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second DocCreate = %v, want already exists", err)
	}
	if _, err := c.DocRead(ctx, "../etc/passwd"); err == nil {
		t.Error("DocRead outside the documents succeeded")
	}
	docs, err := c.DocList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	want := []worker.Document{{Path: "notes.md", Size: 4, UpdatedAt: at}, {Path: "plan.md", Size: 1, UpdatedAt: at}}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("DocList (-want +got):\n%s", diff)
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, _ := connect(t, d, "alice")
	id, err := c.ResourceCreate(t.Context(), `{"big":true}`, "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "res_") {
		t.Errorf("id = %q", id)
	}
	if got, err := c.ResourceRead(t.Context(), id); err != nil || got != `{"big":true}` {
		t.Errorf("ResourceRead = %q, %v", got, err)
	}
	if _, err := c.ResourceRead(t.Context(), "res_missing"); err == nil {
		t.Error("reading a missing resource succeeded")
	}
	if _, err := c.ResourceCreate(t.Context(), "x", "video"); err == nil {
		t.Error("a bad resource type was accepted")
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, _ := connect(t, d, "alice")
	d.Request("bob")

	raw, text, err := c.Call(t.Context(), "team_proposal_create", map[string]any{"type": "approval", "title": "ship it?", "quorum": 1})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ID      string   `json:"id"`
		Options []string `json:"options"`
		State   string   `json:"state"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != "prop-1" || p.State != "active" || !cmp.Equal(p.Options, []string{"approve", "reject"}) || text != "opened prop-1" {
		t.Errorf("proposal = %+v, text %q", p, text)
	}
	raw, _, err = c.Call(t.Context(), "team_vote", map[string]any{"proposal": "prop-1", "choice": "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.State != "resolved" {
		t.Errorf("after the quorum's vote: %+v, %v", p, err)
	}

	_, text, err = c.Call(t.Context(), "channel_read", map[string]any{"limit": 500})
	var te *worker.ToolError
	if !errors.As(err, &te) || err.Error() != "limit must be between 1 and 200" || text != err.Error() {
		t.Errorf("bad input: err %v, text %q; want a ToolError with the tool's message", err, text)
	}
	if _, _, err := c.Call(t.Context(), "no_such_tool", nil); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	want := []string{"team_proposal_create", "team_vote", "channel_read"}
	if diff := cmp.Diff(want, d.Calls()); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, req := connect(t, d, "alice")
	req.Attempt = 2
	for i := range 60 {
		d.Post("bob", "chatter "+string(rune('a'+i%26)))
	}
	d.Post("user", "@alice do the thing")
	if err := c.DocWrite(t.Context(), "", "# Notes\n"); err != nil {
		t.Fatal(err)
	}

	wc, err := worker.Fetch(t.Context(), c, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(wc.Inbox) != 1 || wc.Inbox[0].Content != "@alice do the thing" {
		t.Errorf("Inbox = %+v", wc.Inbox)
	}
	if len(wc.Recent) != worker.RecentLimit || wc.Recent[len(wc.Recent)-1].Seq != 61 {
		t.Errorf("Recent has %d messages ending at #%d, want the last %d", len(wc.Recent), wc.Recent[len(wc.Recent)-1].Seq, worker.RecentLimit)
	}
	if wc.Document != "# Notes\n" || wc.Attempt != 2 || wc.Agent.Name != "alice" || wc.ProjectDir != req.ProjectDir {
		t.Errorf("Fetch = document %q, attempt %d, agent %q, dir %q", wc.Document, wc.Attempt, wc.Agent.Name, wc.ProjectDir)
	}
	if got := d.Cursor("alice"); got != 0 {
		t.Errorf("Fetch acked the inbox up to %d; only the daemon acks", got)
	}
	if len(wc.Documents) != 1 || wc.Documents[0].Path != "notes.md" {
		t.Errorf("Documents = %+v, want notes.md", wc.Documents)
	}
	if got, want := c.NewestSeq(), wc.Inbox[0].Seq; got != want {
		t.Errorf("NewestSeq = %d, want %d", got, want)
	}
}

// runContext is a context as a daemon sends it with a request.
func runContext() *backend.RunContext {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ask := worker.Message{Seq: 9, ID: "msg_9", From: "user", Content: "@alice do the thing", Kind: "message", Mentions: []string{"alice"}, CreatedAt: at}
	return &backend.RunContext{
		Inbox:     tools.InboxResult{Messages: []worker.Message{ask}, Count: 1, NewestSeq: 9},
		Recent:    []worker.Message{{Seq: 8, ID: "msg_8", From: "bob", Content: "chatter", Kind: "message", CreatedAt: at}, ask},
		Notes:     "# Notes from the request\n",
		Documents: []worker.Document{{Path: "notes.md", Size: 24}, {Path: "plan.md", Size: 99}},
	}
}

// TestFetchFromRunContext: a request that carries its context is answered
// from it without a single call to the daemon, and the connection still
// knows what the run was shown (NewestSeq).
func TestFetchFromRunContext(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	c, req := connect(t, d, "alice")
	d.Post("user", "@alice something the daemon has but the request does not")
	req.RunContext = runContext()
	req.Repos = []backend.Repo{{Name: "lib", Path: "/src/lib"}}

	wc, err := worker.Fetch(t.Context(), c, req)
	if err != nil {
		t.Fatal(err)
	}
	if calls := d.Calls(); len(calls) != 0 {
		t.Errorf("Fetch with a run context called the daemon: %v", calls)
	}
	want := worker.Context{Agent: req.Agent, ProjectDir: req.ProjectDir, Repos: req.Repos, Attempt: req.Attempt,
		Inbox: req.RunContext.Inbox.Messages, Recent: req.RunContext.Recent, Document: req.RunContext.Notes, Documents: req.RunContext.Documents}
	if diff := cmp.Diff(want, wc); diff != "" {
		t.Errorf("Fetch (-want +got):\n%s", diff)
	}
	if got := c.NewestSeq(); got != 9 {
		t.Errorf("NewestSeq = %d, want 9, the newest message the run is shown", got)
	}
	if _, err := worker.Fetch(t.Context(), nil, backend.Request{}); err == nil {
		t.Error("Fetch without a context or a connection succeeded")
	}
}

// TestPromptFromRunContextNeverConnects: a CLI backend's prompt comes from
// the request's context even when the daemon cannot be reached, so the
// run's first model call waits for no round trip; without a context the
// unreachable daemon is an error, as before.
func TestPromptFromRunContextNeverConnects(t *testing.T) {
	t.Parallel()
	req := backend.Request{Agent: backend.Agent{Name: "alice", Workflow: "w", Tag: "t"},
		Daemon: backend.MCPServer{URL: closedURL(t)}, RunContext: runContext(),
		Repos: []backend.Repo{{Name: "lib", Path: "/src/lib", Write: true}}}

	got, err := worker.Prompt(t.Context(), req)
	if err != nil {
		t.Fatalf("Prompt with a run context: %v", err)
	}
	for _, want := range []string{"@alice do the thing", "From @bob: chatter", "# Notes from the request", "plan.md (99 bytes)",
		"- lib: /src/lib (writable)"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
	req.RunContext = nil
	if _, err := worker.Prompt(t.Context(), req); err == nil {
		t.Error("Prompt without a context reached no daemon, yet succeeded")
	}
}

// TestHeaderClientSendsHeaders: every request through the client carries the
// configured headers (a server's API key, the daemon's token), replacing one
// the caller set, and the caller's request is left as it was.
func TestHeaderClientSendsHeaders(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	c := worker.HeaderClient(map[string]string{"x-token": "secret", "Authorization": "Bearer run"})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer caller")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("X-Token") != "secret" || h.Get("Authorization") != "Bearer run" {
		t.Errorf("server saw X-Token %q, Authorization %q; want secret, Bearer run", h.Get("X-Token"), h.Get("Authorization"))
	}
	if req.Header.Get("Authorization") != "Bearer caller" {
		t.Errorf("the caller's request was changed: Authorization %q", req.Header.Get("Authorization"))
	}
}
