package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/sandbox/sandboxtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// confinedRunEnv makes the test binary a confined mock run, in a process
// of its own: see runConfined.
const confinedRunEnv = "MOCK_TEST_CONFINED_RUN"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(confinedRunEnv); ok {
		os.Exit(confinedRun(raw))
	}
	os.Exit(m.Run())
}

// testBackend is a mock whose crash step records the code instead of
// exiting, whose stderr is a buffer and whose heartbeats are quick.
type testBackend struct {
	*Backend
	mu     sync.Mutex
	exits  []int
	stderr strings.Builder
}

func newTestBackend() *testBackend {
	tb := &testBackend{}
	tb.Backend = &Backend{heartbeat: 20 * time.Millisecond, stderr: writerFunc(func(p []byte) (int, error) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		return tb.stderr.Write(p)
	})}
	tb.exit = func(code int) {
		tb.mu.Lock()
		tb.exits = append(tb.exits, code)
		tb.mu.Unlock()
	}
	return tb
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// recorder collects a run's events; started is closed by the first.
type recorder struct {
	mu      sync.Mutex
	events  []backend.Event
	started chan struct{}
}

func newRecorder() *recorder { return &recorder{started: make(chan struct{})} }

func (r *recorder) Send(e backend.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 {
		close(r.started)
	}
	r.events = append(r.events, e)
	return nil
}

// after returns the events that follow the prompt's log event.
func (r *recorder) after() []backend.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 || r.events[0].Kind != backend.EventLog {
		return r.events
	}
	return slices.Clone(r.events[1:])
}

func withScript(req backend.Request, script string) backend.Request {
	req.Agent.Config = json.RawMessage(`{"script": ` + script + `}`)
	return req
}

func runMock(t *testing.T, b backend.Backend, req backend.Request) (*recorder, error) {
	t.Helper()
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return rec, b.Run(ctx, req, rec)
}

func TestDefaultScript(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("bob", "@alice please review "+strings.Repeat("x", 100))
	d.Post("user", "@alice and @carol: ship it")
	rec, err := runMock(t, New(), d.Request("alice"))
	if err != nil {
		t.Fatal(err)
	}
	ms := d.Messages()
	want := "[alice] Processed: bob: alice please review " + strings.Repeat("x", 59) + "; user: alice and carol: ship it"
	if got := ms[len(ms)-1]; got.From != "alice" || got.Content != want || len(got.Mentions) != 0 {
		t.Errorf("reply = %+v\nwant content %q and no mentions", got, want)
	}
	if diff := cmp.Diff([]backend.Event{{Kind: backend.EventResult, Text: "alice done."}}, rec.after()); diff != "" {
		t.Errorf("events after the prompt (-want +got):\n%s", diff)
	}
	if prompt := rec.events[0].Text; !strings.Contains(prompt, "## Inbox (2 messages for you)") {
		t.Errorf("the log event is not the prompt:\n%s", prompt)
	}
	if diff := cmp.Diff([]string{"my_inbox", "channel_read", "team_doc_read", "team_doc_list", "channel_send"}, d.Calls()); diff != "" {
		t.Errorf("tool calls (-want +got); the mock must not ack:\n%s", diff)
	}
}

// TestDefaultScriptFromRunContext: with the context in the request, the
// mock's only call to the daemon is its reply.
func TestDefaultScriptFromRunContext(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	ask := d.Post("user", "@alice ship it")
	req := d.Request("alice")
	req.RunContext = &backend.RunContext{Inbox: tools.InboxResult{Messages: []worker.Message{ask}, Count: 1, NewestSeq: ask.Seq},
		Recent: []worker.Message{ask}, Notes: "# the plan"}
	rec, err := runMock(t, New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if prompt := rec.events[0].Text; !strings.Contains(prompt, "From user: @alice ship it") || !strings.Contains(prompt, "# the plan") {
		t.Errorf("the prompt is not built from the request's context:\n%s", prompt)
	}
	if diff := cmp.Diff([]string{"channel_send"}, d.Calls()); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}

func TestDefaultScriptEmptyInbox(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	rec, err := runMock(t, New(), d.Request("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]backend.Event{{Kind: backend.EventResult, Text: "alice done."}}, rec.after()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if slices.Contains(d.Calls(), "channel_send") {
		t.Error("an empty inbox got a reply")
	}
}

func TestInboxSummary(t *testing.T) {
	t.Parallel()
	msg := func(from, content string) worker.Message { return worker.Message{From: from, Content: content} }
	tests := map[string]struct {
		in   []worker.Message
		want string
	}{
		"empty":                {nil, ""},
		"at removed":           {[]worker.Message{msg("bob", "@alice hi @carol")}, "bob: alice hi carol"},
		"cut, then at removed": {[]worker.Message{msg("bob", "@"+strings.Repeat("x", 85))}, "bob: " + strings.Repeat("x", 79)},
		"two joined":           {[]worker.Message{msg("bob", "a"), msg("user", "b")}, "bob: a; user: b"},
		"cut each":             {[]worker.Message{msg("bob", strings.Repeat("é", 90))}, "bob: " + strings.Repeat("é", 80)},
		"cut overall":          {[]worker.Message{msg("a", strings.Repeat("x", 80)), msg("b", strings.Repeat("y", 80)), msg("c", strings.Repeat("z", 80))}, ("a: " + strings.Repeat("x", 80) + "; b: " + strings.Repeat("y", 80) + "; c: " + strings.Repeat("z", 80))[:200]},
	}
	for name, tc := range tests {
		if got := inboxSummary(tc.in); got != tc.want {
			t.Errorf("%s: inboxSummary = %q, want %q", name, got, tc.want)
		}
	}
}

func TestSteps(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		script  string
		attempt int
		check   func(t *testing.T, d *backendtest.Daemon, tb *testBackend, events []backend.Event, err error)
	}{
		"reply with placeholders": {
			script: `[{"reply": "hi {{first_sender}}, {{name}} of {{workflow}}:{{tag}} on attempt {{attempt}} read {{inbox_summary}}"}]`,
			check: func(t *testing.T, d *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				noError(t, err)
				want := "hi bob, alice of test:main on attempt 1 read bob: alice start"
				if ms := d.Messages(); ms[len(ms)-1].Content != want {
					t.Errorf("reply = %q, want %q", ms[len(ms)-1].Content, want)
				}
			},
		},
		"reply as a direct message": {
			script: `[{"reply": "psst", "to": "bob"}]`,
			check: func(t *testing.T, d *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				noError(t, err)
				if m := d.Messages()[1]; m.To != "bob" || m.From != "alice" || m.Content != "psst" {
					t.Errorf("DM = %+v", m)
				}
			},
		},
		"refused reply fails the run": {
			script: `[{"reply": "note to self", "to": "alice"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				if err == nil || !strings.Contains(err.Error(), "yourself") || backend.IsPermanent(err) {
					t.Errorf("err = %v, want the daemon's refusal, retryable", err)
				}
			},
		},
		"tool": {
			script: `[{"tool": "team_doc_append", "args": {"content": "- {{name}}\n", "file": "log.md"}}]`,
			check: func(t *testing.T, d *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if got, _ := d.Document("log.md"); got != "- alice\n" {
					t.Errorf("log.md = %q", got)
				}
				args := json.RawMessage(`{"content":"- alice\n","file":"log.md"}`)
				want := []backend.Event{
					{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "call_1", Name: "team_doc_append", Args: args}},
					{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "call_1", Name: "team_doc_append", Args: args, Result: "appended to log.md"}},
				}
				if diff := cmp.Diff(want, events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			},
		},
		"tool results in later steps": {
			script: `[{"tool": "resource_create", "args": {"content": "big"}}, {"tool": "resource_create", "args": {"content": "bigger", "type": "markdown"}},
				{"reply": "first {{step.1.id}} then {{last.id}} ({{last.type}}), none: [{{step.9.id}}{{last.nosuch}}]"}]`,
			check: func(t *testing.T, d *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				noError(t, err)
				want := "first res_0000000000000001 then res_0000000000000002 (markdown), none: []"
				if ms := d.Messages(); ms[len(ms)-1].Content != want {
					t.Errorf("reply = %q, want %q", ms[len(ms)-1].Content, want)
				}
			},
		},
		"tool without args": {
			script: `[{"tool": "team_members"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if len(events) != 2 || string(events[0].Tool.Args) != "{}" || events[1].Tool.Result != "2 members" {
					t.Errorf("events = %+v", events)
				}
			},
		},
		"refused tool is an error result": {
			script: `[{"tool": "channel_read", "args": {"limit": 500}}, {"result": "went on: {{last.error}}"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if len(events) != 3 || !events[1].Tool.IsError || events[1].Tool.Result != "limit must be between 1 and 200" || events[2].Text != "went on: limit must be between 1 and 200" {
					t.Errorf("events = %+v", events)
				}
			},
		},
		"unknown tool fails the run": {
			script: `[{"tool": "no_such_tool"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				if err == nil || !strings.Contains(err.Error(), "no_such_tool") {
					t.Errorf("err = %v", err)
				}
			},
		},
		"sleep with heartbeats": {
			script: `[{"sleep": "150ms"}, {"result": "awake"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if n := countKind(events, backend.EventHeartbeat); n < 3 || events[len(events)-1].Text != "awake" {
					t.Errorf("%d heartbeats in %+v, want at least 3 then the result", n, events)
				}
			},
		},
		"events": {
			script: `[{"text": "thinking about {{first_sender}}"}, {"usage": {"input": 10, "output": 5, "cost": 0.001}}, {"session": "sess-1"}, {"result": "final"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				want := []backend.Event{
					{Kind: backend.EventText, Text: "thinking about bob"},
					{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.001}},
					{Kind: backend.EventSession, SessionID: "sess-1"},
					{Kind: backend.EventResult, Text: "final"},
				}
				if diff := cmp.Diff(want, events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			},
		},
		"fail is retryable": {
			script: `[{"fail": "flaky {{attempt}}"}, {"result": "never"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				if err == nil || err.Error() != "flaky 1" || backend.IsPermanent(err) || len(events) != 0 {
					t.Errorf("err = %v (permanent %v), events %+v", err, backend.IsPermanent(err), events)
				}
			},
		},
		"fail permanent": {
			script: `[{"fail": "bad key", "permanent": true}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				if err == nil || err.Error() != "bad key" || !backend.IsPermanent(err) {
					t.Errorf("err = %v, want permanent", err)
				}
			},
		},
		"when attempt 1 fails": {
			script: whenScript,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, _ []backend.Event, err error) {
				if err == nil || err.Error() != "first try fails" {
					t.Errorf("err = %v", err)
				}
			},
		},
		"when attempt 2 succeeds": {
			script: whenScript, attempt: 2,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if diff := cmp.Diff([]backend.Event{{Kind: backend.EventResult, Text: "done on 2"}}, events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			},
		},
		"hang false does nothing": {
			script: `[{"hang": false}, {"result": "ok"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if len(events) != 1 {
					t.Errorf("events = %+v", events)
				}
			},
		},
		"crash exits at once": {
			script: `[{"text": "before"}, {"crash": 3}, {"result": "never"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, tb *testBackend, events []backend.Event, err error) {
				if !slices.Equal(tb.exits, []int{3}) {
					t.Errorf("exit calls = %v, want [3]", tb.exits)
				}
				if err == nil || len(events) != 1 {
					t.Errorf("after the exit: err %v, events %+v; want an error and nothing more", err, events)
				}
			},
		},
		"flood": {
			script: `[{"flood": 5000}, {"result": "done"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if n := countKind(events, backend.EventText); n != 5000 {
					t.Errorf("%d text events, want 5000", n)
				}
			},
		},
		"stderr": {
			script: `[{"stderr": "warning from {{name}}"}, {"stderr": "again"}]`,
			check: func(t *testing.T, _ *backendtest.Daemon, tb *testBackend, _ []backend.Event, err error) {
				noError(t, err)
				if got := tb.stderr.String(); got != "warning from alice\nagain\n" {
					t.Errorf("stderr = %q", got)
				}
			},
		},
		"empty script does nothing": {
			script: `[]`,
			check: func(t *testing.T, d *backendtest.Daemon, _ *testBackend, events []backend.Event, err error) {
				noError(t, err)
				if len(events) != 0 || slices.Contains(d.Calls(), "channel_send") {
					t.Errorf("events %+v, calls %v", events, d.Calls())
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Request("bob")
			d.Post("bob", "@alice start")
			req := withScript(d.Request("alice"), tc.script)
			req.Attempt = max(tc.attempt, 1)
			tb := newTestBackend()
			rec, err := runMock(t, tb, req)
			tc.check(t, d, tb, rec.after(), err)
		})
	}
}

const whenScript = `[{"fail": "first try fails", "when": {"attempt": 1}}, {"result": "done on {{attempt}}", "when": {"attempt": 2}}]`

func TestHangBlocksUntilCancelled(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := withScript(d.Request("alice"), `[{"hang": true}, {"result": "never"}]`)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- New().Run(ctx, req, rec) }()
	<-rec.started // the prompt: the hang comes next
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before it was cancelled", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if got := rec.after(); len(got) != 0 {
		t.Errorf("a hang sent events: %+v", got)
	}
}

func TestScriptErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ config, want string }{
		"unknown step key":     {`{"script": [{"repy": "x"}]}`, `script step 1: unknown key "repy"`},
		"two actions":          {`{"script": [{"reply": "x"}, {"reply": "a", "text": "b"}]}`, `script step 2: both "reply" and "text"`},
		"no action":            {`{"script": [{"to": "bob"}]}`, `script step 1: no action`},
		"misplaced modifier":   {`{"script": [{"text": "x", "to": "bob"}]}`, `script step 1: "to" goes only with "reply"`},
		"bad duration":         {`{"script": [{"sleep": "soon"}]}`, `script step 1: sleep: "soon"`},
		"number as text":       {`{"script": [{"reply": 5}]}`, `script step 1: reply: want a string`},
		"unknown usage key":    {`{"script": [{"usage": {"inputs": 3}}]}`, `script step 1: usage: want an object`},
		"bad attempt":          {`{"script": [{"text": "x", "when": {"attempt": 0}}]}`, `script step 1: when: attempt`},
		"unknown when key":     {`{"script": [{"text": "x", "when": {"try": 1}}]}`, `script step 1: when:`},
		"bad exit code":        {`{"script": [{"crash": 300}]}`, `script step 1: crash: exit code 300`},
		"empty tool":           {`{"script": [{"tool": ""}]}`, `script step 1: tool: must not be empty`},
		"empty shell":          {`{"script": [{"shell": " "}]}`, `script step 1: shell: must not be empty`},
		"shell as a list":      {`{"script": [{"shell": ["ls"]}]}`, `script step 1: shell: want a command line`},
		"repo beside a reply":  {`{"script": [{"reply": "x", "repo": "lib"}]}`, `script step 1: "repo" goes only with "shell" or "write", not "reply"`},
		"empty repo":           {`{"script": [{"shell": "ls", "repo": ""}]}`, `script step 1: repo: must not be empty`},
		"not a list":           {`{"script": {"reply": "x"}}`, `want a list of steps`},
		"unknown config key":   {`{"scrpit": []}`, `unknown key "scrpit"`},
		"both sources":         {`{"script": [], "script_file": "x.yaml"}`, `not both`},
		"missing file":         {`{"script_file": "missing.yaml"}`, `script_file: open`},
		"config not an object": {`[1]`, `config: want a JSON object`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			req := d.Request("alice")
			req.Agent.Config = json.RawMessage(tc.config)
			_, err := runMock(t, New(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !backend.IsPermanent(err) {
				t.Errorf("err = %v, want a permanent error containing %q", err, tc.want)
			}
			if calls := d.Calls(); len(calls) != 0 {
				t.Errorf("a bad script still reached the daemon: %v", calls)
			}
		})
	}
}

func TestScriptFile(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"mock.yaml": `# a scripted reviewer
- reply: |
    looked at it, {{first_sender}}
    all good
- tool: team_doc_append
  args: {content: "reviewed by {{name}}\n"}
- fail: flaky
  when:
    attempt: 1
- result: 'done: {{attempt}}'
`,
		"mock.json": `[{"reply": "looked at it, {{first_sender}}\nall good\n"},
			{"tool": "team_doc_append", "args": {"content": "reviewed by {{name}}\n"}},
			{"fail": "flaky", "when": {"attempt": 1}}, {"result": "done: {{attempt}}"}]`,
	}
	for file, src := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("bob", "@alice review please")
			req := d.Request("alice")
			if err := os.WriteFile(filepath.Join(req.ProjectDir, file), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			req.Agent.Config = json.RawMessage(`{"script_file": "` + file + `"}`)
			if _, err := runMock(t, New(), req); err == nil || err.Error() != "flaky" {
				t.Fatalf("attempt 1: err = %v, want flaky", err)
			}
			req.Attempt = 2
			rec, err := runMock(t, New(), req)
			if err != nil {
				t.Fatal(err)
			}
			events := rec.after()
			if last := events[len(events)-1]; last.Kind != backend.EventResult || last.Text != "done: 2" {
				t.Errorf("last event = %+v", last)
			}
			if ms := d.Messages(); ms[1].Content != "looked at it, bob\nall good\n" || ms[2].Content != ms[1].Content {
				t.Errorf("replies = %q, %q", ms[1].Content, ms[2].Content)
			}
			if doc, _ := d.Document("notes.md"); doc != "reviewed by alice\nreviewed by alice\n" {
				t.Errorf("notes.md = %q", doc)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	hang := backendtest.WithHangingRequest(func(r backend.Request) backend.Request {
		return withScript(r, `[{"hang": true}]`)
	})
	t.Run("in-process", func(t *testing.T) {
		backendtest.Run(t, func(*testing.T) backend.Backend { return New() }, hang)
	})
	t.Run("grpc", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backend.Backend { return plugintest.Backend(t, New()) }, hang)
	})
}

func noError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

func countKind(events []backend.Event, k backend.EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// A shell step runs in the project directory with the mock's environment,
// and its output (cut at 64 KiB) and a failing exit come back as text.
func TestShellStep(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	req.Agent.Config = json.RawMessage(`{"env": {"IGNORED_BY_THE_MOCK": "x"}, "script": [
		{"shell": "pwd; echo to-stderr >&2; exit 3"},
		{"shell": "head -c 100000 /dev/zero | tr '\\0' x"},
		{"result": "after the shell"}]}`)
	rec, err := runMock(t, New(), req)
	noError(t, err)
	all := rec.after()
	// Each step is a shell tool's call and result too, with its exit
	// status: the daemon's evidence.
	var exits []string
	for _, e := range all {
		if e.Kind == backend.EventToolResult && e.Tool.Name == "shell" && e.Tool.Exit != nil {
			exits = append(exits, fmt.Sprint(*e.Tool.Exit, e.Tool.IsError))
		}
	}
	if want := []string{"3 true", "0 false"}; !slices.Equal(exits, want) {
		t.Errorf("shell results' exit statuses = %q, want %q", exits, want)
	}
	events := withoutTools(all)
	if len(events) != 3 || events[0].Kind != backend.EventText || events[1].Kind != backend.EventText {
		t.Fatalf("events = %+v; want two texts and the result", events)
	}
	dir, _ := filepath.EvalSymlinks(req.ProjectDir)
	if want := dir + "\nto-stderr\n\nexit status 3"; events[0].Text != want {
		t.Errorf("shell output = %q, want %q", events[0].Text, want)
	}
	if got := events[1].Text; len(got) != maxShellOutput || strings.Trim(got, "x") != "" {
		t.Errorf("a 100,000-byte output came back as %d bytes, want the first %d", len(got), maxShellOutput)
	}
	if events[2].Text != "after the shell" {
		t.Errorf("the run did not go on after a failing command: %+v", events[2])
	}
}

// kinds returns the kinds of events, in order.
// withoutTools leaves out the tool calls and results a shell step
// reports beside its output.
func withoutTools(events []backend.Event) []backend.Event {
	return slices.DeleteFunc(slices.Clone(events), func(e backend.Event) bool {
		return e.Kind == backend.EventToolCall || e.Kind == backend.EventToolResult
	})
}

func kinds(events []backend.Event) []backend.EventKind {
	var out []backend.EventKind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

// refusal reports whether a sandbox event's text says that what (a path,
// "TCP port N") is outside the agent's sandbox.
func refusal(e backend.Event, what string) bool {
	return e.Kind == backend.EventSandbox && strings.Contains(e.Text, what+" is outside the agent's sandbox")
}

// ofKind returns the texts of the events of kind k.
func ofKind(events []backend.Event, k backend.EventKind) []string {
	var out []string
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e.Text)
		}
	}
	return out
}

// A shell step has the run's tool network, not the plugin's: none unless
// the policy grants ports to tools, and a refused port is a sandbox
// event. Only the command is confined (sandbox.RunTool), so this runs in
// the test process.
func TestShellStepToolNetwork(t *testing.T) {
	t.Parallel()
	sandboxtest.NeedLandlock(t)
	port := sandboxtest.Listen(t)
	line := sandboxtest.ConnectLine(t, port)
	for name, tc := range map[string]struct {
		toolNet sandbox.Net
		refused bool
	}{
		"none by default":         {sandbox.Net{}, true},
		"a port granted to tools": {sandbox.Net{Ports: []uint16{port}}, false},
		"every port":              {sandbox.Net{All: true}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			req := withScript(backend.Request{ProjectDir: dir, RunContext: &backend.RunContext{}}, fmt.Sprintf(`[{"shell": %q}]`, line))
			req.Sandbox = sandboxtest.Policy(dir, port)
			req.Sandbox.ToolNet = tc.toolNet
			rec, err := runMock(t, New(), req)
			noError(t, err)
			events := withoutTools(rec.after())
			want := []backend.EventKind{backend.EventText}
			if tc.refused {
				want = append(want, backend.EventSandbox)
			}
			if diff := cmp.Diff(want, kinds(events)); diff != "" {
				t.Fatalf("event kinds (-want +got):\n%s\nevents: %+v", diff, events)
			}
			out := events[0].Text
			if connected := strings.Contains(out, "connected"); connected == tc.refused {
				t.Errorf("shell output = %q; connected %v, want %v", out, connected, !tc.refused)
			}
			if tc.refused && (!strings.Contains(out, "Permission denied") || !refusal(events[1], fmt.Sprintf("TCP port %d", port))) {
				t.Errorf("shell output = %q and %+v, want the refusal and a sandbox event naming port %d", out, events[1], port)
			}
		})
	}
}

// A run without a sandbox explains nothing: a "Permission denied" is not
// the sandbox's.
func TestShellStepUnconfinedExplainsNothing(t *testing.T) {
	t.Parallel()
	rec, err := runMock(t, New(), withScript(backend.Request{ProjectDir: t.TempDir(), RunContext: &backend.RunContext{}},
		`[{"shell": "echo 'cat: /root/secret: Permission denied' >&2; exit 1"}]`))
	noError(t, err)
	if got := ofKind(rec.after(), backend.EventSandbox); len(got) != 0 {
		t.Errorf("sandbox events = %q, want none", got)
	}
}

// confinedRequest is what runConfined hands the confined run.
type confinedRequest struct {
	Dir    string
	Policy sandbox.Policy
	Script string
}

// runConfined runs a mock run with script in a process of its own, this
// test binary confined to policy as the sdk confines a warm spare before
// its run: a Landlock layer cannot be lifted, so the test process itself
// is never confined. It returns the run's events after the prompt.
func runConfined(t *testing.T, dir string, policy sandbox.Policy, script string) []backend.Event {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(confinedRequest{Dir: dir, Policy: policy, Script: script})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), confinedRunEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the confined run: %v\n%s", err, stderr.String())
	}
	var events []backend.Event
	if err := json.Unmarshal(out, &events); err != nil {
		t.Fatalf("the confined run's events: %v\n%s", err, out)
	}
	return events
}

// confinedRun is the process of runConfined: it confines itself, runs
// the mock and prints its events after the prompt as JSON.
func confinedRun(raw string) int {
	var cr confinedRequest
	if err := json.Unmarshal([]byte(raw), &cr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := sandbox.Restrict(cr.Policy); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	req := withScript(backend.Request{ProjectDir: cr.Dir, RunContext: &backend.RunContext{}, Sandbox: cr.Policy, SandboxApplied: true}, cr.Script)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := New().Run(ctx, req, rec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(rec.after()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// In a confined run a shell step works in the project but cannot read
// what the policy leaves out, nor reach a port only the plugin may, and
// the transcript says which path and port the sandbox refused.
func TestShellStepInTheSandbox(t *testing.T) {
	t.Parallel()
	sandboxtest.NeedLandlock(t)
	port := sandboxtest.Listen(t)
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := json.Marshal([]map[string]string{
		{"shell": "echo mine > mine.txt && cat mine.txt"},
		{"shell": "cat " + secret},
		{"shell": sandboxtest.ConnectLine(t, port)},
	})
	events := withoutTools(runConfined(t, dir, sandboxtest.Policy(dir, port), string(script)))

	want := []backend.EventKind{backend.EventText, backend.EventText, backend.EventSandbox, backend.EventText, backend.EventSandbox}
	if diff := cmp.Diff(want, kinds(events)); diff != "" {
		t.Fatalf("event kinds (-want +got):\n%s\nevents: %+v", diff, events)
	}
	texts := ofKind(events, backend.EventText)
	if texts[0] != "mine\n" {
		t.Errorf("writing in the project printed %q, want %q", texts[0], "mine\n")
	}
	if !strings.Contains(texts[1], "Permission denied") || strings.Contains(texts[1], "the secret") {
		t.Errorf("cat of a file outside the sandbox printed %q, want a refusal", texts[1])
	}
	if strings.Contains(texts[2], "connected") || !strings.Contains(texts[2], "Permission denied") {
		t.Errorf("a connection to the plugin's port printed %q, want a refusal", texts[2])
	}
	if !refusal(events[2], secret) || !strings.Contains(events[2].Text, "not readable") {
		t.Errorf("sandbox event after the cat = %q, want it to name %s, not readable", events[2].Text, secret)
	}
	if !refusal(events[4], fmt.Sprintf("TCP port %d", port)) {
		t.Errorf("sandbox event after the connection = %q, want it to name port %d", events[4].Text, port)
	}
}

// Shell and write steps ask the daemon's gate first: a refused step does
// not run, it is a gate event and an error result, and the next step
// reads the reason as {{last.error}}; an allowed write writes the file.
func TestStepsAskTheGate(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	const reason = "phase plan of skill implement does not allow write_file"
	d.Gate = func(agent string, call tools.GateCall) tools.GateDecision {
		if call.Tool == "write_file" && filepath.Base(call.Path) == "main.go" || call.Command == "git commit -m wip" {
			return tools.GateDecision{Reason: reason + " (" + agent + ")"}
		}
		return tools.GateDecision{Allowed: true}
	}
	req := d.Request("alice")
	req.Agent.Config = json.RawMessage(`{"script": [
		{"write": "main.go", "content": "package main\n"},
		{"text": "refused: {{last.error}}"},
		{"shell": "git commit -m wip"},
		{"write": "1_IMPLEMENT_PLAN.md", "content": "the plan"},
		{"result": "wrote {{last.path}}"}]}`)
	rec, err := runMock(t, New(), req)
	noError(t, err)
	events := rec.after()
	if _, err := os.Stat(filepath.Join(req.ProjectDir, "main.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("main.go: %v, want it not written", err)
	}
	if b, err := os.ReadFile(filepath.Join(req.ProjectDir, "1_IMPLEMENT_PLAN.md")); err != nil || string(b) != "the plan" {
		t.Errorf("the plan = %q, %v", b, err)
	}
	if got := ofKind(events, backend.EventGate); len(got) != 2 || !strings.HasPrefix(got[0], reason) {
		t.Errorf("gate events = %q, want two with the reason", got)
	}
	if got := ofKind(events, backend.EventText); len(got) != 1 || got[0] != "refused: "+reason+" (alice)" {
		t.Errorf("texts = %q, want the next step to read the reason", got)
	}
	if got := ofKind(events, backend.EventResult); len(got) != 1 || got[0] != "wrote 1_IMPLEMENT_PLAN.md" {
		t.Errorf("result = %q", got)
	}
	var results []string
	for _, e := range events {
		if e.Kind == backend.EventToolResult {
			results = append(results, fmt.Sprintf("%s error=%v", e.Tool.Name, e.Tool.IsError))
		}
	}
	if want := []string{"write_file error=true", "shell error=true", "write_file error=false"}; !slices.Equal(results, want) {
		t.Errorf("tool results = %q, want %q", results, want)
	}
}

// A shell or write step naming a repository works in it: the command
// starts there, the file lands there (and the gate is asked about that
// path), a read-only one refuses the write and the script goes on, and a
// repository the run lacks ends the run, naming those it has.
func TestStepsWorkInRepos(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	var asked []string
	var mu sync.Mutex
	d.Gate = func(agent string, call tools.GateCall) tools.GateDecision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, call.Path)
		return tools.GateDecision{Allowed: true}
	}
	lib, app := t.TempDir(), t.TempDir()
	repos := []backend.Repo{{Name: "lib", Path: lib}, {Name: "app", Path: app, Write: true}}
	req := d.Request("alice")
	req.Repos = repos
	req.Agent.Config = json.RawMessage(`{"script": [
		{"shell": "pwd -P", "repo": "lib"},
		{"write": "fix.go", "content": "package app\n", "repo": "app"},
		{"write": "fix.go", "content": "package lib\n", "repo": "lib"},
		{"result": "{{last.error}}"}]}`)
	rec, err := runMock(t, New(), req)
	noError(t, err)
	events := rec.after()
	realLib, _ := filepath.EvalSymlinks(lib)
	if got := ofKind(events, backend.EventText); len(got) != 1 || got[0] != realLib+"\n" {
		t.Errorf("shell output = %q, want the command to start in lib (%s)", got, realLib)
	}
	if b, err := os.ReadFile(filepath.Join(app, "fix.go")); err != nil || string(b) != "package app\n" {
		t.Errorf("app/fix.go = %q, %v; want what the step wrote", b, err)
	}
	if _, err := os.Stat(filepath.Join(lib, "fix.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lib/fix.go: %v, want the read-only repository left alone", err)
	}
	if got := ofKind(events, backend.EventResult); len(got) != 1 || got[0] != "repository lib is read-only in this workspace: write_file cannot change it" {
		t.Errorf("result = %q, want the refused write's error", got)
	}
	var calls []string
	for _, e := range events {
		if e.Kind == backend.EventToolCall {
			calls = append(calls, string(e.Tool.Args))
		}
	}
	if len(calls) != 3 || !strings.Contains(calls[0], `"repo":"lib"`) || !strings.Contains(calls[1], `"repo":"app"`) {
		t.Errorf("tool calls = %q, want each to name its repository", calls)
	}
	mu.Lock()
	if want := []string{"", filepath.Join(app, "fix.go")}; !slices.Equal(asked, want) {
		t.Errorf("gate asked about paths %q, want %q", asked, want)
	}
	mu.Unlock()

	for name, tc := range map[string]struct {
		repos []backend.Repo
		want  string
	}{
		"unknown":         {repos, `mock: step 1: shell: repo "docs" is not in this workspace: use one of lib, app`},
		"no repositories": {nil, `mock: step 1: shell: repo "docs" is not in this workspace, which has no repositories`},
	} {
		req := d.Request("alice")
		req.Repos = tc.repos
		req.Agent.Config = json.RawMessage(`{"script": [{"shell": "touch ran", "repo": "docs"}]}`)
		_, err := runMock(t, New(), req)
		if err == nil || err.Error() != tc.want || !backend.IsPermanent(err) {
			t.Errorf("%s: err = %v, want a permanent %q", name, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(req.ProjectDir, "ran")); err == nil {
			t.Errorf("%s: the command ran", name)
		}
	}
}
