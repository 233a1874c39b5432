package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// standIn writes a shell script that plays codex: it records its
// arguments, working directory and environment in $CODEX_HOME/calls, one
// call after another, then runs body.
func standIn(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codex")
	script := `#!/bin/sh
{ echo "--- call"; printf 'arg %s\n' "$@"; echo "cwd $(pwd)"; echo "token $AGENT_WORKER_MCP_TOKEN"; } >> "$CODEX_HOME/calls"
` + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// sample is a stand-in body that prints testdata/name and exits with code.
func sample(name, code string) string {
	abs, _ := filepath.Abs(filepath.Join("testdata", name))
	return "cat '" + abs + "'\nexit " + code
}

// newBackend returns a backend that keeps threads in a test folder and
// sends no heartbeats (they would keep the conformance suite from seeing
// a blocked run go quiet).
func newBackend(t *testing.T) *Backend {
	return &Backend{SessionsDir: t.TempDir(), getenv: func(string) string { return "" }}
}

func withCLI(req backend.Request, path string) backend.Request {
	req.Agent.Config = json.RawMessage(`{"cli": "` + path + `", "timeout": "30s"}`)
	return req
}

func run(t *testing.T, b *Backend, req backend.Request) (*backendtest.Recorder, error) {
	t.Helper()
	rec := &backendtest.Recorder{}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return rec, b.Run(ctx, req, rec)
}

// calls reads what the stand-in recorded, one string per invocation.
func calls(t *testing.T, req backend.Request) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(req.WorkDir, "codex-home", "calls"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimPrefix(string(b), "--- call\n"), "--- call\n")
}

func TestConformance(t *testing.T) {
	t.Parallel()
	ok := standIn(t, sample("tool_ok.jsonl", "0"))
	hang := standIn(t, `echo '{"type":"thread.started","thread_id":"t-hang"}'; exec sleep 300`)
	backendtest.Run(t, func(t *testing.T) backend.Backend { return newBackend(t) },
		backendtest.WithRequest(func(r backend.Request) backend.Request { return withCLI(r, ok) }),
		backendtest.WithHangingRequest(func(r backend.Request) backend.Request { return withCLI(r, hang) }))
}

func TestRun(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice say hi")
	b := newBackend(t)
	req := withCLI(d.Request("alice"), standIn(t, sample("tool_ok.jsonl", "0")))
	req.Agent.System = "You are Alice, who \"quotes\"."
	req.Agent.Model = "openai/gpt-5"
	req.Repos = []backend.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: "/data/worktrees/alice/app", Write: true}}
	rec, err := run(t, b, req)
	if err != nil {
		t.Fatal(err)
	}

	call := calls(t, req)[0]
	for _, want := range []string{"arg exec\narg --json\narg --skip-git-repo-check\narg --disable\narg unbounded_connection_retries\narg --enable\narg hooks\narg --dangerously-bypass-hook-trust\narg --\narg You are @alice",
		"## Inbox (1 message for you)", "- lib: /src/lib (read-only)", "cwd " + req.ProjectDir, "token " + strings.TrimPrefix(req.Daemon.Headers["Authorization"], "Bearer ")} {
		if !strings.Contains(call, want) {
			t.Errorf("codex call lacks %q:\n%s", want, call)
		}
	}
	config, err := os.ReadFile(filepath.Join(req.WorkDir, "codex-home", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`model = "gpt-5"`, `developer_instructions = "You are Alice, who \"quotes\"."`, `url = "` + d.URL() + `"`,
		// Codex may write the writable repository; it reads lib anyway.
		"[sandbox_workspace_write]\nwritable_roots = [\"/data/worktrees/alice/app\"]\n"} {
		if !strings.Contains(string(config), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, config)
		}
	}
	if target, err := os.Readlink(filepath.Join(req.WorkDir, "codex-home", "sessions")); err != nil || target != filepath.Join(b.SessionsDir, "threads", "test", "main", "alice") {
		t.Errorf("CODEX_HOME/sessions -> %q, %v; want the agent's folder under SessionsDir", target, err)
	}

	want := []backend.Event{
		{Kind: backend.EventSession, SessionID: "01a20365-1e05-78f3-9875-dd5f0a989765"},
		{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "item_1", Name: "channel_send", Args: json.RawMessage(`{"message":"hello from alice"}`)}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "item_1", Name: "channel_send", Args: json.RawMessage(`{"message":"hello from alice"}`), Result: "sent as #2"}},
		{Kind: backend.EventText, Text: "sent it"},
		{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 220, OutputTokens: 12}},
		{Kind: backend.EventResult, Text: "sent it"},
	}
	got := rec.Of(backend.EventSession, backend.EventToolCall, backend.EventToolResult, backend.EventText, backend.EventUsage, backend.EventResult)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// Codex exits 0 although the MCP call failed and the agent said nothing:
// the run must fail, so the inbox is not acked.
func TestFailedMCPCallWithExitZero(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice say hi")
	rec, err := run(t, newBackend(t), withCLI(d.Request("alice"), standIn(t, sample("mcp_failed_no_answer.jsonl", "0"))))
	if err == nil || !strings.Contains(err.Error(), "requires approval") || backend.IsPermanent(err) {
		t.Errorf("err = %v, want the failed call, retryable", err)
	}
	results := rec.Of(backend.EventToolResult)
	if len(results) != 1 || !results[0].Tool.IsError {
		t.Errorf("tool results = %+v, want one error result", results)
	}
	if len(rec.Of(backend.EventResult)) != 0 {
		t.Error("a failed run sent a result")
	}
}

func TestFailuresWithExitZero(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sample    string
		want      string
		permanent bool
	}{
		"model unreachable": {"turn_failed.jsonl", "Connection failed", false},
		"bad API key":       {"unauthorized.jsonl", "401 Unauthorized", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			_, err := run(t, newBackend(t), withCLI(d.Request("alice"), standIn(t, sample(tc.sample, "0"))))
			if err == nil || !strings.Contains(err.Error(), tc.want) || backend.IsPermanent(err) != tc.permanent {
				t.Errorf("err = %v (permanent %v), want %q (permanent %v)", err, backend.IsPermanent(err), tc.want, tc.permanent)
			}
		})
	}
}

func TestBadConfigIsPermanent(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	script := standIn(t, `echo 'Error loading config.toml: unknown variant' >&2; exit 1`)
	_, err := run(t, newBackend(t), withCLI(d.Request("alice"), script))
	if !backend.IsPermanent(err) || !strings.Contains(err.Error(), "Error loading config") {
		t.Errorf("err = %v, want a permanent config error", err)
	}
}

func TestMissingCLI(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	_, err := run(t, newBackend(t), withCLI(d.Request("alice"), filepath.Join(t.TempDir(), "codex")))
	if !backend.IsPermanent(err) || !strings.Contains(err.Error(), "codex CLI not found") ||
		!strings.Contains(err.Error(), "npm install -g @openai/codex") {
		t.Errorf("err = %v, want a permanent error that says how to install codex", err)
	}
	if len(d.Calls()) != 0 {
		t.Errorf("the run reached the daemon (%v) before finding the CLI", d.Calls())
	}
}

func TestResume(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := withCLI(d.Request("alice"), standIn(t, sample("tool_ok.jsonl", "0")))
	req.ResumeSession = "01a20365-1e05-78f3-9875-dd5f0a989765"
	if _, err := run(t, newBackend(t), req); err != nil {
		t.Fatal(err)
	}
	if c := calls(t, req); len(c) != 1 || !strings.Contains(c[0], "arg exec\narg resume\n") || !strings.Contains(c[0], "arg --\narg "+req.ResumeSession+"\narg You are") {
		t.Errorf("calls = %q, want one exec resume of the thread", c)
	}
}

// A thread codex cannot find (its files were lost) is started afresh once.
func TestResumeStaleThread(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	script := standIn(t, `if [ "$2" = resume ]; then
  echo "Error: thread/resume: thread/resume failed: no rollout found for thread id $8 (code -32600)" >&2; exit 1
fi
`+sample("tool_ok.jsonl", "0"))
	req := withCLI(d.Request("alice"), script)
	req.ResumeSession = "gone"
	rec, err := run(t, newBackend(t), req)
	if err != nil {
		t.Fatal(err)
	}
	c := calls(t, req)
	if len(c) != 2 || !strings.Contains(c[0], "arg resume") || strings.Contains(c[1], "arg resume") {
		t.Errorf("calls = %q, want a resume and then a new thread", c)
	}
	var logged bool
	for _, e := range rec.Of(backend.EventLog) {
		logged = logged || strings.Contains(e.Text, "could not resume thread gone") && strings.Contains(e.Text, "no rollout found")
	}
	if !logged || len(rec.Of(backend.EventResult)) != 1 {
		t.Errorf("want a log of the stale thread and one result; events: %+v", rec.Of(backend.EventLog, backend.EventResult))
	}
}

// A resumed run that fails once the thread is running is not retried as a
// new thread: the daemon retries the run.
func TestResumeFailureAfterStart(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := withCLI(d.Request("alice"), standIn(t, sample("turn_failed.jsonl", "1")))
	req.ResumeSession = "01a20365-00cf-73d3-9fc6-34b66f382a88"
	if _, err := run(t, newBackend(t), req); err == nil || !strings.Contains(err.Error(), "Connection failed") {
		t.Errorf("err = %v, want the turn's failure", err)
	}
	if c := calls(t, req); len(c) != 1 {
		t.Errorf("codex ran %d times, want 1", len(c))
	}
}

func TestBaseURLFromEnvironment(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	b := newBackend(t)
	b.getenv = func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://fake/v1"}[k] }
	req := withCLI(d.Request("alice"), standIn(t, sample("tool_ok.jsonl", "0")))
	if _, err := run(t, b, req); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(req.WorkDir, "codex-home", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`model_provider = "agent-worker"`, `base_url = "http://fake/v1"`, `env_key = "OPENAI_API_KEY"`, `wire_api = "responses"`} {
		if !strings.Contains(string(config), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, config)
		}
	}
}

// A quiet codex still shows the daemon that the run is alive.
func TestHeartbeatWhileQuiet(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	b := newBackend(t)
	b.heartbeat = 20 * time.Millisecond
	rec, err := run(t, b, withCLI(d.Request("alice"), standIn(t, "sleep 0.3\n"+sample("tool_ok.jsonl", "0"))))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Of(backend.EventHeartbeat)); n < 3 {
		t.Errorf("%d heartbeats in 300ms of silence, want one every 20ms", n)
	}
}
