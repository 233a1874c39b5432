package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// fake is the scripted ACP agent (testdata/fakeacp), built once per test
// process.
var fake string

func TestMain(m *testing.M) {
	var err error
	if fake, err = testkit.BuildE("plugins/acp/testdata/fakeacp"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testkit.Main(m)
}

// agentRun is one run of the fake agent: its script, mode and the folder
// it keeps sessions in.
type agentRun struct {
	script []map[string]any
	mode   string
	dir    string // FAKEACP_DIR; a temp dir when ""
	extra  map[string]any
	// onEvent, when set, sees each event as it is sent.
	onEvent func(backend.Event)
}

// run runs req against the fake agent and returns its events, the
// requests the agent recorded and Run's error.
func (a agentRun) run(t *testing.T, ctx context.Context, req backend.Request) ([]backend.Event, []recorded, error) {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "record.jsonl")
	if a.dir == "" {
		a.dir = t.TempDir()
	}
	script, _ := json.Marshal(a.script)
	cfg := map[string]any{"command": []string{fake}, "init_timeout": "3s",
		"env": map[string]string{"FAKEACP_SCRIPT": string(script), "FAKEACP_DIR": a.dir, "FAKEACP_RECORD": rec, "FAKEACP_MODE": a.mode}}
	for k, v := range a.extra {
		cfg[k] = v
	}
	req.Agent.Config, _ = json.Marshal(cfg)
	if req.ProjectDir == "" {
		req.ProjectDir = t.TempDir()
	}
	ev := &backendtest.Recorder{}
	b := New()
	b.grace = 2 * time.Second
	err := b.Run(ctx, req, backend.EventsFunc(func(e backend.Event) error {
		if a.onEvent != nil {
			a.onEvent(e)
		}
		return ev.Send(e)
	}))
	return ev.Events(), readRecord(t, rec), err
}

// recorded is one request the fake agent got.
type recorded struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func readRecord(t *testing.T, file string) []recorded {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []recorded
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func find(recs []recorded, method string) (recorded, bool) {
	for _, r := range recs {
		if r.Method == method {
			return r, true
		}
	}
	return recorded{}, false
}

func texts(es []backend.Event, kind backend.EventKind) string {
	var b strings.Builder
	for _, e := range es {
		if e.Kind == kind {
			b.WriteString(e.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A run as a team member sees it: the agent is handed the daemon's MCP
// server with the run's token, reads the prompt (the inbox, the system
// prompt on top), replies in the channel through channel_send, and its
// text, tool call, plan, usage, session and result become the run's
// events.
func TestRunRepliesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@carol what is in the README?")
	req := d.Request("carol")
	req.Agent.System = "You are terse."
	a := agentRun{script: []map[string]any{
		{"plan": []string{"read the inbox", "answer"}},
		{"tool": "channel_send", "args": map[string]any{"message": "the README says hello"}},
		{"text": "done in {{session}}"},
		{"usage": [2]int{120, 30}},
	}}
	es, recs, err := a.run(t, timeout(t), req)
	if err != nil {
		t.Fatalf("Run = %v\nevents: %+v", err, es)
	}
	var sent bool
	for _, m := range d.Messages() {
		sent = sent || (m.From == "carol" && m.Content == "the README says hello")
	}
	if !sent {
		t.Errorf("carol's channel_send did not reach the daemon: %+v", d.Messages())
	}
	p, ok := find(recs, "session/prompt")
	if !ok || !strings.Contains(string(p.Params), `## System\nYou are terse.`) || !strings.Contains(string(p.Params), "what is in the README?") {
		t.Errorf("the prompt the agent got: %s", p.Params)
	}
	in, _ := find(recs, "initialize")
	if !strings.Contains(string(in.Params), `"protocolVersion":1`) || !strings.Contains(string(in.Params), `"readTextFile":true`) {
		t.Errorf("initialize: %s", in.Params)
	}
	n, _ := find(recs, "session/new")
	if !strings.Contains(string(n.Params), `"name":"agent-worker"`) || !strings.Contains(string(n.Params), `"Bearer `) {
		t.Errorf("session/new did not hand over the daemon with the run's token: %s", n.Params)
	}
	var session, result string
	var calls, results int
	var usage *backend.Usage
	for _, e := range es {
		switch e.Kind {
		case backend.EventSession:
			session = e.SessionID
		case backend.EventResult:
			result = e.Text
		case backend.EventToolCall:
			calls++
		case backend.EventToolResult:
			results++
			if e.Tool.IsError || e.Tool.Name != "channel_send" {
				t.Errorf("tool result %+v", e.Tool)
			}
		case backend.EventUsage:
			usage = e.Usage
		}
	}
	if session == "" || result != "done in "+session {
		t.Errorf("session %q, result %q", session, result)
	}
	if calls != 1 || results != 1 {
		t.Errorf("%d tool calls, %d results; want 1 and 1", calls, results)
	}
	if usage == nil || usage.InputTokens != 120 || usage.OutputTokens != 30 {
		t.Errorf("usage %+v", usage)
	}
	if log := texts(es, backend.EventLog); !strings.Contains(log, "plan:\n[ ] read the inbox\n[ ] answer") || !strings.Contains(log, "acp: fakeacp 1.0.0 (protocol 1)") {
		t.Errorf("log lines:\n%s", log)
	}
}

// The second run continues the first one's ACP session (session/load),
// and what the agent replays while loading is not this run's text.
func TestRunResumesTheSession(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@carol hello")
	a := agentRun{script: []map[string]any{{"text": "turns before: {{turns}}"}}, dir: t.TempDir()}
	es, _, err := a.run(t, timeout(t), d.Request("carol"))
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, e := range es {
		if e.Kind == backend.EventSession {
			first = e.SessionID
		}
	}
	req := d.Request("carol")
	req.ResumeSession = first
	es, recs, err := a.run(t, timeout(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(recs, "session/load"); !ok {
		t.Errorf("the second run did not load the session: %+v", recs)
	}
	if _, ok := find(recs, "session/new"); ok {
		t.Errorf("the second run started a new session")
	}
	if got := texts(es, backend.EventText); got != "turns before: 1\n" {
		t.Errorf("second run's text = %q (replayed turns must not count)", got)
	}
	for _, e := range es {
		if e.Kind == backend.EventSession && e.SessionID != first {
			t.Errorf("session %q, want %q", e.SessionID, first)
		}
	}

	// A session the agent does not know starts a new one, saying so.
	req.ResumeSession = "gone"
	es, _, err = a.run(t, timeout(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if log := texts(es, backend.EventLog); !strings.Contains(log, "could not load session gone") {
		t.Errorf("log: %s", log)
	}
}

// Permission requests go to the daemon's gate: a call the phase refuses
// is rejected with the phase's reason as a gate event, an allowed one is
// allowed.
func TestPermissionsAskTheGate(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	var asked []tools.GateCall
	d.Gate = func(agent string, call tools.GateCall) tools.GateDecision {
		asked = append(asked, call)
		if strings.HasPrefix(call.Command, "git push") {
			return tools.GateDecision{Reason: "phase plan does not allow shell \"git push\""}
		}
		return tools.GateDecision{Allowed: true}
	}
	a := agentRun{script: []map[string]any{
		{"permission": map[string]any{"kind": "execute", "title": "push", "command": "git push origin main"}},
		{"permission": map[string]any{"kind": "execute", "title": "test", "command": "go test ./..."}},
	}}
	es, _, err := a.run(t, timeout(t), d.Request("carol"))
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(es, backend.EventText); got != "permission push: reject\n\npermission test: allow\n\n" {
		t.Errorf("outcomes:\n%s", got)
	}
	if g := texts(es, backend.EventGate); !strings.Contains(g, `shell: phase plan does not allow shell "git push"`) {
		t.Errorf("gate events: %q", g)
	}
	if len(asked) != 2 || asked[0].Tool != "shell" || asked[0].Command != "git push origin main" {
		t.Errorf("the gate was asked %+v", asked)
	}

}

// An agent whose only way to refuse is to abort (codex-acp) ends its
// turn cancelled when the gate refuses: the run succeeds with the
// refusal in its events, as it does for an agent that goes on, since a
// retry would only be refused again.
func TestRefusedCallThatAbortsTheTurn(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Gate = func(string, tools.GateCall) tools.GateDecision {
		return tools.GateDecision{Reason: "phase plan does not allow edit_file"}
	}
	a := agentRun{script: []map[string]any{
		{"text": "editing"},
		{"permission": map[string]any{"kind": "edit", "title": "Edit main.go", "path": "/w/main.go", "abort": true}},
		{"text": "never said"},
	}}
	es, _, err := a.run(t, timeout(t), d.Request("carol"))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if g := texts(es, backend.EventGate); !strings.Contains(g, "edit_file: phase plan does not allow edit_file") {
		t.Errorf("gate events: %q", g)
	}
	if l := texts(es, backend.EventLog); !strings.Contains(l, "ended the turn when a tool call was refused") {
		t.Errorf("logs do not say why the turn ended: %q", l)
	}
	if r := texts(es, backend.EventResult); strings.Contains(r, "never said") || !strings.Contains(r, "permission Edit main.go: reject") {
		t.Errorf("result: %q", r)
	}
}

// The agent's approvals gate a command the gate allows: it runs once a
// person approved it (the fake daemon's owner approves at once), and the
// approval names the command.
func TestPermissionsWaitForApproval(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	a := agentRun{script: []map[string]any{
		{"permission": map[string]any{"kind": "execute", "title": "push", "command": "git push"}},
	}, extra: map[string]any{"approvals": map[string]any{"shell": []string{"git push*"}}}}
	es, _, err := a.run(t, timeout(t), d.Request("carol"))
	if err != nil {
		t.Fatal(err)
	}
	// The fake daemon's approval_wait: see sdk/backendtest.
	calls := strings.Join(d.Calls(), " ")
	if !strings.Contains(calls, tools.ApprovalWait) {
		t.Errorf("approval_wait was not asked; calls: %s", calls)
	}
	if got := texts(es, backend.EventText); got != "permission push: allow\n\n" {
		t.Errorf("outcome: %q", got)
	}
	var approved bool
	for _, m := range d.Messages() {
		approved = approved || m.Content == "carol was approved: git push"
	}
	if !approved {
		t.Errorf("no approval of git push: %+v", d.Messages())
	}
}

// File requests are served inside the run's directory only: a read and a
// write there work, a path outside (or through ..) is refused, and a
// write the gate refuses is not made.
func TestFilesStayInTheRunsDirectory(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Gate = func(_ string, call tools.GateCall) tools.GateDecision {
		if call.Tool == "write_file" && strings.HasSuffix(call.Path, "locked.txt") {
			return tools.GateDecision{Reason: "phase plan does not allow write_file"}
		}
		return tools.GateDecision{Allowed: true}
	}
	project := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "README.md"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(project, "link")); err != nil {
		t.Fatal(err)
	}
	a := agentRun{script: []map[string]any{
		{"read": filepath.Join(project, "README.md")},
		{"read": filepath.Join(outside, "secret")},
		{"read": project + "/../" + filepath.Base(outside) + "/secret"},
		{"read": filepath.Join(project, "link", "secret")},
		{"write": filepath.Join(project, "out", "notes.md"), "content": "hi"},
		{"write": filepath.Join(outside, "planted"), "content": "x"},
		{"write": filepath.Join(project, "locked.txt"), "content": "x"},
	}}
	req := d.Request("carol")
	req.ProjectDir = project
	es, _, err := a.run(t, timeout(t), req)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(es, backend.EventText)
	if !strings.Contains(got, "README.md: one\ntwo\nthree\n") {
		t.Errorf("the read inside the project failed:\n%s", got)
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("a file outside the project was read:\n%s", got)
	}
	if n := strings.Count(got, "outside the run's directories"); n != 4 {
		t.Errorf("%d refusals, want 4 (three reads, one write):\n%s", n, got)
	}
	if b, err := os.ReadFile(filepath.Join(project, "out", "notes.md")); err != nil || string(b) != "hi" {
		t.Errorf("the write inside the project: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("a file was written outside the project")
	}
	if _, err := os.Stat(filepath.Join(project, "locked.txt")); err == nil {
		t.Error("the write the gate refused was made")
	}
	if !strings.Contains(texts(es, backend.EventGate), "write_file: phase plan does not allow write_file") {
		t.Errorf("gate events: %s", texts(es, backend.EventGate))
	}
}

// Cancelling the run sends session/cancel, the agent ends its turn, and
// Run returns promptly with the context's error.
func TestCancelEndsTheTurn(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	ctx, cancel := context.WithCancel(timeout(t))
	a := agentRun{script: []map[string]any{{"text": "working"}, {"hang": true}}}
	var start time.Time
	a.onEvent = func(e backend.Event) {
		if e.Kind == backend.EventText && e.Text == "working" {
			start = time.Now()
			cancel() // the agent hangs next, until cancelled
		}
	}
	type out struct {
		recs []recorded
		err  error
	}
	done := make(chan out, 1)
	go func() {
		_, recs, err := a.run(t, ctx, d.Request("carol"))
		done <- out{recs, err}
	}()
	o := <-done
	if o.err == nil || !strings.Contains(o.err.Error(), "context canceled") {
		t.Errorf("Run = %v, want the context's error", o.err)
	}
	if _, ok := find(o.recs, "session/cancel"); !ok {
		t.Errorf("the agent got no session/cancel: %+v", o.recs)
	}
	if _, ok := find(o.recs, "cancelled"); !ok {
		t.Errorf("the agent did not end its turn as cancelled: %+v", o.recs)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Run took %s to end after the cancel", el)
	}
}

// Bad input: a command that prints something else, one that never
// answers, and one of another protocol version each fail permanently,
// naming the command and what it wrote or the version.
func TestNotAnACPAgent(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	for mode, want := range map[string]string{
		"garbage":  `is not an ACP agent: no answer to initialize within 3s; its first output: "Usage: fakeacp [options] -- this is not JSON-RPC\n"`,
		"silent":   "is not an ACP agent: no answer to initialize within 3s; it wrote nothing on stdout",
		"version2": "speaks ACP protocol version 2; this backend speaks version 1",
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			_, _, err := agentRun{mode: mode}.run(t, timeout(t), d.Request("carol"))
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fake) || !backend.IsPermanent(err) {
				t.Errorf("Run = %v (permanent %v)\nwant %q", err, backend.IsPermanent(err), want)
			}
		})
	}
	t.Run("exits", func(t *testing.T) {
		t.Parallel()
		req := d.Request("carol")
		req.Agent.Config = json.RawMessage(`{"command": ["false"]}`)
		err := New().Run(timeout(t), req, &backendtest.Recorder{})
		if err == nil || !strings.Contains(err.Error(), "false is not an ACP agent: it exited before answering initialize") {
			t.Errorf("Run = %v", err)
		}
	})
	t.Run("no command", func(t *testing.T) {
		t.Parallel()
		req := d.Request("carol")
		req.Agent.Config = json.RawMessage(`{}`)
		err := New().Run(timeout(t), req, &backendtest.Recorder{})
		if err == nil || !strings.Contains(err.Error(), "command is missing") || !backend.IsPermanent(err) {
			t.Errorf("Run = %v", err)
		}
	})
}

// An agent that takes no HTTP MCP servers runs without the daemon's tools,
// and the run's log says so.
func TestNoHTTPMCPIsSaid(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	es, recs, err := agentRun{mode: "nohttp", script: []map[string]any{{"text": "hi"}}}.run(t, timeout(t), d.Request("carol"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(texts(es, backend.EventLog), "does not take HTTP MCP servers (mcpCapabilities.http), so it runs without the daemon's tools") {
		t.Errorf("log: %s", texts(es, backend.EventLog))
	}
	if n, _ := find(recs, "session/new"); strings.Contains(string(n.Params), "agent-worker") {
		t.Errorf("session/new: %s", n.Params)
	}
}
