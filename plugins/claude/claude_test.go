package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// withFake points a request at the stand-in CLI, scripted by model.
func withFake(r backend.Request, model string, extra ...string) backend.Request {
	cfg := map[string]any{"cli": fakeCLI}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	r.Agent.Config, _ = json.Marshal(cfg)
	r.Agent.Model = model
	return r
}

func TestConformance(t *testing.T) {
	t.Parallel()
	backendtest.Run(t, func(*testing.T) backend.Backend { return New() },
		backendtest.WithRequest(func(r backend.Request) backend.Request { return withFake(r, "anthropic/send") }),
		backendtest.WithHangingRequest(func(r backend.Request) backend.Request { return withFake(r, "hang") }),
		backendtest.WithTimeout(30*time.Second))
}

// report is what the fake CLI says about how it was started.
func report(t *testing.T, e *backendtest.Recorder) (cwd string, args []string) {
	t.Helper()
	for _, ev := range e.Of(backend.EventLog) {
		if rest, ok := strings.CutPrefix(ev.Text, "fake-claude "); ok {
			var r struct {
				Cwd  string   `json:"cwd"`
				Args []string `json:"args"`
			}
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			return r.Cwd, r.Args
		}
	}
	t.Fatal("the fake CLI's report is not in the transcript (stderr → log events)")
	return "", nil
}

// configDirOf is the CLAUDE_CONFIG_DIR the fake CLI reports it had.
func configDirOf(t *testing.T, e *backendtest.Recorder) string {
	t.Helper()
	for _, ev := range e.Of(backend.EventLog) {
		if rest, ok := strings.CutPrefix(ev.Text, "fake-claude "); ok {
			var r struct {
				ConfigDir string `json:"config_dir"`
			}
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			return r.ConfigDir
		}
	}
	t.Fatal("the fake CLI's report is not in the transcript (stderr → log events)")
	return ""
}

func run(t *testing.T, b backend.Backend, req backend.Request) (*backendtest.Recorder, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ev := &backendtest.Recorder{}
	return ev, b.Run(ctx, req, ev)
}

// A run works in the project, keeps its MCP config (with the run's token)
// private to the run, and reports the session, the tool call and the
// answer.
func TestRun(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice please say hi")
	req := withFake(d.Request("alice"), "anthropic/send")
	req.Agent.System = "Be brief."
	req.Repos = []backend.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: "/data/worktrees/alice/app", Write: true}}
	ev, err := run(t, New(), req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	msgs := d.Messages()
	if last := msgs[len(msgs)-1]; last.From != "alice" || last.Content != "hello from fake claude as @alice" {
		t.Errorf("last channel message = %+v, want alice's hello", last)
	}
	if s := ev.Of(backend.EventSession); len(s) != 1 || s[0].SessionID != "fake-session" {
		t.Errorf("session events = %+v", s)
	}
	if r := ev.Of(backend.EventResult); len(r) != 1 || r[0].Text != "done" {
		t.Errorf("result events = %+v", r)
	}
	if c := ev.Of(backend.EventToolResult); len(c) != 1 || c[0].Tool.Name != "mcp__agent-worker__channel_send" {
		t.Errorf("tool results = %+v", c)
	}
	if u := ev.Of(backend.EventUsage); len(u) != 1 || *u[0].Usage != (backend.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01}) {
		t.Errorf("usage events = %+v", u)
	}
	cwd, args := report(t, ev)
	if cwd != req.ProjectDir {
		t.Errorf("the CLI ran in %s, want the project dir %s", cwd, req.ProjectDir)
	}
	mcp := filepath.Join(req.WorkDir, "mcp.json")
	for _, want := range []string{"--model=send", "--append-system-prompt=Be brief.", mcp, "--add-dir=/src/lib", "--add-dir=/data/worktrees/alice/app"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if st, err := os.Stat(mcp); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mcp config: %v, %v; want a 0600 file in the work dir", st, err)
	}
	if entries, err := os.ReadDir(req.ProjectDir); err != nil || len(entries) != 0 {
		t.Errorf("the run wrote into the user's project: %v, %v", entries, err)
	}
}

// With the run's context in the request, the CLI's prompt is built from
// it and the backend asks the daemon nothing before the CLI starts: the
// only call the daemon sees is the CLI's own reply.
func TestRunPromptFromRunContext(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice a message the daemon holds")
	req := withFake(d.Request("alice"), "anthropic/send")
	req.RunContext = &backend.RunContext{
		Inbox: tools.InboxResult{Messages: []tools.Message{{Seq: 1, From: "user", Content: "@alice from the request", Kind: "message"}}, Count: 1, NewestSeq: 1},
		Notes: "# notes from the request",
	}
	ev, err := run(t, New(), req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if diff := cmp.Diff([]string{"channel_send"}, d.Calls()); diff != "" {
		t.Errorf("daemon tool calls (-want +got); the prompt needs none:\n%s", diff)
	}
	_, args := report(t, ev)
	prompt := args[len(args)-1]
	for _, want := range []string{"From user: @alice from the request", "# notes from the request"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the CLI's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "the daemon holds") {
		t.Errorf("the prompt was fetched from the daemon, not built from the request:\n%s", prompt)
	}
}

// A known session is resumed; one the CLI no longer has is dropped and the
// run starts a new conversation instead of failing.
func TestResume(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		resume, wantSession string
		retried             bool
	}{
		"known": {knownSession, knownSession, false},
		"stale": {"9d3c4b5a-gone", "fake-session", true},
		"none":  {"", "fake-session", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@alice again")
			req := withFake(d.Request("alice"), "send")
			req.ResumeSession = tc.resume
			ev, err := run(t, New(), req)
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if s := ev.Of(backend.EventSession); len(s) != 1 || s[0].SessionID != tc.wantSession {
				t.Errorf("session events = %+v, want one with %s", s, tc.wantSession)
			}
			retried := false
			for _, l := range ev.Of(backend.EventLog) {
				retried = retried || strings.Contains(l.Text, "starting a new conversation")
			}
			if retried != tc.retried {
				t.Errorf("retried without --resume = %v, want %v", retried, tc.retried)
			}
			if n := len(ev.Of(backend.EventResult)); n != 1 {
				t.Errorf("%d results, want 1", n)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		req       func(backend.Request) backend.Request
		want      []string
		permanent bool
	}{
		"missing CLI": {
			func(r backend.Request) backend.Request {
				r.Agent.Config = json.RawMessage(`{"cli": "/nonexistent/claude"}`)
				return r
			},
			[]string{"claude CLI not found", "npm install -g @anthropic-ai/claude-code"}, true,
		},
		"bad config": {
			func(r backend.Request) backend.Request { return withFake(r, "send", "timeout", "soon") },
			[]string{"timeout"}, true,
		},
		"crash without result": {
			func(r backend.Request) backend.Request { return withFake(r, "crash") },
			[]string{"status 3", "boom: out of cheese"}, false,
		},
		"bad API key": {
			func(r backend.Request) backend.Request { return withFake(r, "auth") },
			[]string{"Invalid API key"}, true,
		},
		"idle CLI": {
			func(r backend.Request) backend.Request { return withFake(r, "hang", "timeout", "300ms") },
			[]string{"no output for 300ms"}, false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@alice go")
			_, err := run(t, New(), tc.req(d.Request("alice")))
			if err == nil {
				t.Fatal("Run = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if backend.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent = %v, want %v (%v)", backend.IsPermanent(err), tc.permanent, err)
			}
		})
	}
}

// A CLI that is alive but quiet (a long model turn, a long tool) still
// sends heartbeats, so that the daemon's idle timer leaves it to the
// backend's own timeout.
func TestHeartbeatWhileQuiet(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := withFake(d.Request("alice"), "hang", "timeout", "1s")
	ev, err := run(t, &Backend{heartbeat: 50 * time.Millisecond}, req)
	if err == nil || !strings.Contains(err.Error(), "no output") {
		t.Errorf("Run = %v, want the idle timeout", err)
	}
	if n := len(ev.Of(backend.EventHeartbeat)); n < 5 {
		t.Errorf("%d heartbeats in a quiet second, want one every 50ms", n)
	}
}

func TestStatus(t *testing.T) {
	t.Setenv("PATH", filepath.Dir(fakeCLI))
	if got, want := Status(t.Context()), "claude 9.9.9 (Fake Claude) at "+fakeCLI; got != want {
		t.Errorf("Status = %q, want %q", got, want)
	}
	t.Setenv("PATH", t.TempDir())
	if got, want := Status(t.Context()), "missing: "+Install; got != want {
		t.Errorf("Status = %q, want %q", got, want)
	}
}

// A confined run cannot use the user's ~/.claude, so the CLI keeps its
// config in the agent's state directory (or the run's work dir without
// one), unless the agent's env names its own.
func TestConfigDirUnderTheSandbox(t *testing.T) {
	t.Parallel()
	policy := sandbox.Policy{Read: []string{"/usr"}, Write: []string{"/tmp"}}
	for name, tc := range map[string]struct {
		policy   sandbox.Policy
		state    bool
		agentEnv string
		want     func(req backend.Request) string
	}{
		"not confined":                 {sandbox.Policy{}, true, "", func(backend.Request) string { return os.Getenv(envConfigDir) }},
		"confined":                     {policy, true, "", func(r backend.Request) string { return filepath.Join(r.StateDir, "config") }},
		"confined without a state dir": {policy, false, "", func(r backend.Request) string { return filepath.Join(r.WorkDir, "config") }},
		"the agent's own":              {policy, true, "/srv/claude", func(backend.Request) string { return "/srv/claude" }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@alice hi")
			req := withFake(d.Request("alice"), "send")
			if tc.agentEnv != "" {
				req.Agent.Config, _ = json.Marshal(map[string]any{"cli": fakeCLI, "env": map[string]string{envConfigDir: tc.agentEnv}})
			}
			if tc.state {
				req.StateDir = t.TempDir()
			}
			req.Sandbox = tc.policy
			ev, err := run(t, New(), req)
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			want := tc.want(req)
			if got := configDirOf(t, ev); got != want {
				t.Errorf("CLAUDE_CONFIG_DIR = %q, want %q", got, want)
			}
			if tc.policy.IsZero() || tc.agentEnv != "" {
				return
			}
			if st, err := os.Stat(want); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
				t.Errorf("config dir: %v, %v; want a 0700 directory", st, err)
			}
		})
	}
}

// Claude Code's own telemetry is switched on only when the daemon hands
// the run an OTLP endpoint, and never over what the agent or user set.
func TestTelemetryEnv(t *testing.T) {
	t.Parallel()
	all := []string{"CLAUDE_CODE_ENABLE_TELEMETRY=1", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1", "OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=otlp", "OTEL_LOGS_EXPORTER=otlp"}
	tests := map[string]struct {
		agent map[string]string
		env   map[string]string
		want  []string
	}{
		"tracing off":     {env: map[string]string{"TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		"endpoint handed": {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, want: all},
		"traces endpoint": {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4318/v1/traces"}, want: all},
		"agent opts out":  {agent: map[string]string{"CLAUDE_CODE_ENABLE_TELEMETRY": "0"}, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, want: all[1:]},
		"user's exporter": {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "prometheus"}, want: []string{all[0], all[1], all[2], all[4]}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := telemetryEnv(tt.agent, func(k string) string { return tt.env[k] })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("telemetryEnv (-want +got):\n%s", diff)
			}
		})
	}
}
