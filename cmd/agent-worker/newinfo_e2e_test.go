package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// startDaemonWith runs `agent-worker daemon args…` with extra environment
// and its stderr in a file, and waits for it to publish daemon.json.
func (c *cli) startDaemonWith(env []string, args ...string) (cmd *exec.Cmd, stderr string) {
	c.t.Helper()
	stderr = filepath.Join(c.t.TempDir(), "daemon.stderr")
	f, err := os.Create(stderr)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	cmd = exec.Command(binary, append([]string{"daemon"}, args...)...)
	cmd.Env = append(c.env(), env...)
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go cmd.Wait()
	c.waitFor("daemon.json of pid "+strconv.Itoa(cmd.Process.Pid), func() bool {
		d, err := api.ReadDaemonInfo(c.home)
		return err == nil && d.PID == cmd.Process.Pid
	})
	return cmd, stderr
}

// `new <name>` with no flags, as in the seed: backend sdk with the default
// model; with no API key in the daemon's environment the agent is still
// created, and new, info and the first run all name the variable to set.
func TestE2ENewWithNoFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t) // the daemon it starts has no ANTHROPIC_API_KEY
	r := c.run("new", "alice")
	if r.code != 0 || r.stdout != "alice (sdk/anthropic/claude-sonnet-4-5)\n" {
		t.Fatalf("new alice: exit %d, stdout %q, stderr %q; want it created with the default model", r.code, r.stdout, r.stderr)
	}
	if want := "ANTHROPIC_API_KEY is not set in the daemon's environment"; !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--backend mock") {
		t.Errorf("new alice stderr %q; want a warning saying %q and what to do", r.stderr, want)
	}
	if out := c.ok("info", "alice"); !strings.Contains(out, "warning:") || !strings.Contains(out, "ANTHROPIC_API_KEY is not set") {
		t.Errorf("info alice does not show the missing key:\n%s", out)
	}
	c.ok("send", "alice", "hello")
	c.waitFor("alice's first run to fail", func() bool { return c.agent("alice").State == "failed" })
	if out := c.ok("info", "alice"); !strings.Contains(out, "last error:") || strings.Count(out, "ANTHROPIC_API_KEY") < 2 {
		t.Errorf("info after the first run does not say which variable to set:\n%s", out)
	}

	// A daemon configured with another default model, whose key it has.
	c2 := newCLI(t)
	c2.startDaemonWith([]string{"AGENT_WORKER_DEFAULT_MODEL=openai/gpt-4o-mini", "OPENAI_API_KEY=sk-test"})
	if r := c2.run("new", "bob"); r.code != 0 || r.stdout != "bob (sdk/openai/gpt-4o-mini)\n" || r.stderr != "" {
		t.Errorf("new bob on a daemon with --default-model: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if out := c2.ok("new", "carol", "--model", "anthropic/claude-haiku-4-5"); out != "carol (sdk/anthropic/claude-haiku-4-5)\n" {
		t.Errorf("new carol --model printed %q", out)
	}
}

// `info <agent>` shows the whole config (env by names only), state, last
// run, last error and inbox depth.
func TestE2EInfoShowsTheWholeAgent(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cfg := `{"env":{"SECRET_TOKEN":"hunter2"},"tools":["read","shell"],"max_steps":7}`
	c.ok("new", "alice@review:pr-1", "--model", "anthropic/claude-sonnet-4-5", "--system", "You review code.\nBe kind.\nBe brief.",
		"--schedule", "30m", "--wakeup-prompt", "any news?", "--config", cfg)
	c.ok("send", "alice@review:pr-1", "look at this")
	c.waitFor("alice to fail", func() bool { return c.agent("alice@review:pr-1").State == "failed" })
	out := c.ok("info", "alice@review:pr-1")
	for _, want := range []string{
		"agent:      alice@review:pr-1", "workflow:   review:pr-1", "backend:    sdk", "model:      anthropic/claude-sonnet-4-5",
		"state:      failed", "inbox:      1 unread", "schedule:   30m", "wakeup:     any news?",
		"system:     You review code. (+2 more lines)", "tools:      read, shell", "env:        SECRET_TOKEN",
		`config:     {"max_steps":7}`, "last run:   run_", "last error: sdk: ANTHROPIC_API_KEY is not set",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("info does not show %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("info shows an env value:\n%s", out)
	}
}

// A system prompt is text: a binary file is refused before anything is
// created.
func TestE2ENewRefusesNUL(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	bin := filepath.Join(t.TempDir(), "prompt.bin")
	if err := os.WriteFile(bin, []byte("be\x00brief"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := c.run("new", "alice", "--backend", "mock", "--system-file", bin); r.code != api.ExitUsage || !strings.Contains(r.stderr, "NUL byte") {
		t.Errorf("new with a binary system prompt: exit %d, stderr %q; want %d naming the NUL byte", r.code, r.stderr, api.ExitUsage)
	}
	if agents := c.listJSON(); len(agents) != 0 {
		t.Errorf("a refused agent was created: %+v", agents)
	}
}

// 5 is only "no daemon answered": a daemon that answers "unavailable,
// retry" or accepts a request and does not answer in time exits 6.
func TestE2EExitCodeUnavailable(t *testing.T) {
	t.Parallel()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"documents provider file is restarting after a crash: retry in 400ms","code":"unavailable"}`)
	}))
	t.Cleanup(unavailable.Close)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // accepts the request, never answers
	}))
	t.Cleanup(silent.Close)
	tests := map[string]struct {
		server string
		args   []string
		says   string
	}{
		"daemon answers 503": {unavailable.URL, []string{"doc", "read"}, "restarting after a crash"},
		"no answer in time":  {silent.URL, []string{"list", "--request-timeout", "300ms"}, "did not answer within 300ms"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &cli{t: t, home: t.TempDir()}
			u, _ := url.Parse(tc.server)
			port, _ := strconv.Atoi(u.Port())
			// A live pid (this test) publishing the stand-in's address.
			if err := api.WriteDaemonInfo(c.home, api.DaemonInfo{PID: os.Getpid(), Host: u.Hostname(), Port: port, Token: "x"}); err != nil {
				t.Fatal(err)
			}
			r := c.run(tc.args...)
			if r.code != api.ExitUnavailable || !strings.Contains(r.stderr, tc.says) {
				t.Errorf("agent-worker %s: exit %d, stderr %q; want %d saying %q", strings.Join(tc.args, " "), r.code, r.stderr, api.ExitUnavailable, tc.says)
			}
		})
	}
}

// Ctrl-C during ask cancels the run and exits 130.
func TestE2EAskInterrupted(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock", "--config", `{"script":[{"hang":true}]}`)
	ask := exec.Command(binary, "ask", "alice", "work forever")
	ask.Env = c.env()
	var stderr strings.Builder
	ask.Stderr = &stderr
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("alice's run", func() bool { a := c.agent("alice"); return len(a.Runs) > 0 && a.Runs[0].State == "running" })
	if err := ask.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = ask.Wait()
	if code := ask.ProcessState.ExitCode(); code != api.ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("ask after Ctrl-C: exit %d, stderr %q; want %d, interrupted", code, stderr.String(), api.ExitInterrupted)
	}
	c.ok("stop", "alice")
}

// Every exit code is in the root --help.
func TestE2EHelpListsExitCodes(t *testing.T) {
	t.Parallel()
	c := &cli{t: t, home: t.TempDir()}
	r := c.run("--help")
	for _, want := range []string{"0 ok", "1 error", "2 usage", "3 not found", "4 conflict", "5 no daemon answered",
		`6 the daemon answered "unavailable, retry"`, "130 interrupted"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
			t.Errorf("--help does not list %q:\n%s", want, r.stdout)
		}
	}
}

// --listen beyond loopback is a usage error without --allow-remote, and a
// warning with it.
func TestE2EListenNeedsAllowRemote(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	r := c.run("daemon", "--listen", "0.0.0.0:0")
	if r.code != api.ExitUsage || !strings.Contains(r.stderr, "--allow-remote") || !strings.Contains(r.stderr, "token full control") {
		t.Errorf("daemon --listen 0.0.0.0:0: exit %d, stderr %q; want %d explaining --allow-remote", r.code, r.stderr, api.ExitUsage)
	}
	if _, err := api.ReadDaemonInfo(c.home); err == nil {
		t.Fatalf("a daemon started on 0.0.0.0 without --allow-remote")
	}
	_, logPath := c.startDaemonWith(nil, "--listen", "0.0.0.0:0", "--allow-remote", "--insecure-http")
	if log, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(log), "reachable from other machines") {
		t.Errorf("daemon with --allow-remote logged no warning (%v):\n%s", err, log)
	}
	if _, err := c.client().Health(context.Background()); err != nil {
		t.Errorf("daemon with --allow-remote does not answer: %v", err)
	}
}

// The JSON an agent's info carries the same warning a script can read.
func TestE2ENewJSONCarriesWarnings(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var a api.Agent
	if err := json.Unmarshal([]byte(c.ok("new", "dora", "--model", "openai/gpt-4o", "--json")), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "OPENAI_API_KEY") {
		t.Errorf("new --json warnings = %q, want OPENAI_API_KEY named", a.Warnings)
	}
}
