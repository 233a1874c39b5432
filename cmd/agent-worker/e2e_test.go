package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/sandbox/sandboxtest"
)

// binary is the agent-worker binary (the CLI and the daemon) and pluginsDir
// holds the first-party plugins, all with the race detector when this test
// binary has it: the daemon passes its GORACE on to its plugins, so their
// reports fail the test too (checkRaces). All built once per test process.
var binary, pluginsDir, mockPlugin string

func TestMain(m *testing.M) {
	sandboxtest.MaybeAttack() // the probe a confined run starts (seccomp_e2e_test.go)
	// Every daemon this process starts, by itself or through a command's
	// auto-start, ends when this process does (testParent): a test killed
	// by its timeout leaves none running. env() passes it on too.
	os.Setenv(testParent, strconv.Itoa(os.Getpid()))
	dir, err := buildBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		testkit.RemoveBuilds()
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	testkit.RemoveBuilds()
	os.Exit(code)
}

// buildBinaries builds agent-worker and installs every first-party
// backend plugin, and the one docs plugin no provider is built in for (a
// cluster's), into one plugins.d in a temp dir it returns.
func buildBinaries() (string, error) {
	var err error
	if binary, err = testkit.RaceBuildE("cmd/agent-worker"); err != nil {
		return "", err
	}
	mains, err := filepath.Glob("../agent-worker-backend-*")
	if err != nil || len(mains) == 0 {
		return "", fmt.Errorf("no backend plugins beside cmd/agent-worker: %v", err)
	}
	mains = append(mains, "../agent-worker-docs-postgres")
	dir, err := os.MkdirTemp("", "aw-e2e-")
	if err != nil {
		return "", err
	}
	pluginsDir = filepath.Join(dir, "plugins.d")
	if err := os.Mkdir(pluginsDir, 0o755); err != nil {
		return dir, err
	}
	for _, m := range mains {
		name := filepath.Base(m)
		bin, err := testkit.RaceBuildE("cmd/" + name)
		if err != nil {
			return dir, err
		}
		if _, err := testkit.InstallE(bin, pluginsDir, name); err != nil {
			return dir, err
		}
	}
	mockPlugin = filepath.Join(pluginsDir, "agent-worker-backend-mock")
	return dir, nil
}

// cli runs agent-worker commands against one home, with a free port for any
// daemon they start.
type cli struct {
	t    *testing.T
	home string
	// races is where the race detector of the binaries this cli starts
	// (built with it when this test binary has it) writes its reports.
	races string
	// exe and fixedEnv, when set, are the binary and the whole
	// environment instead of the test's build and env().
	exe      string
	fixedEnv []string
	// daemonAttr, when set, is how startDaemon starts the daemon (in a
	// private cgroup: privateCgroup).
	daemonAttr *syscall.SysProcAttr
}

func newCLI(t *testing.T) *cli {
	c := &cli{t: t, home: t.TempDir(), races: t.TempDir()}
	t.Cleanup(func() {
		c.stopDaemon()
		c.checkRaces()
	})
	return c
}

func (c *cli) binary() string {
	if c.exe != "" {
		return c.exe
	}
	return binary
}

func (c *cli) env() []string {
	if c.fixedEnv != nil {
		return c.fixedEnv
	}
	env := []string{"AGENT_WORKER_HOME=" + c.home, "AGENT_WORKER_LISTEN=127.0.0.1:0", "AGENT_WORKER_PLUGINS_DIR=" + pluginsDir,
		"PATH=" + os.Getenv("PATH"), "HOME=" + c.home, testParent + "=" + os.Getenv(testParent)}
	if testkit.Race {
		// Reports to files checkRaces reads; and no second of sleep at
		// every exit (the race runtime's default), which every command
		// would pay.
		env = append(env, "GORACE=log_path="+filepath.Join(c.races, "race")+" atexit_sleep_ms=0")
	}
	return env
}

// checkRaces fails the test with each report the race detector wrote in a
// command or daemon this cli started: a race there is a defect as much as
// one in the test's own process, which go test -race fails on.
func (c *cli) checkRaces() {
	c.t.Helper()
	reports, err := filepath.Glob(filepath.Join(c.races, "race.*"))
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range reports {
		b, err := os.ReadFile(r)
		if err != nil {
			c.t.Errorf("race report %s: %v", r, err)
			continue
		}
		c.t.Errorf("the race detector reported in process %s:\n%s", strings.TrimPrefix(filepath.Ext(r), "."), b)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return c.runIn("", args...)
}

// runIn is run from the working directory dir ("" is the test's).
func (c *cli) runIn(dir string, args ...string) result {
	c.t.Helper()
	return c.runWith(dir, nil, args...)
}

// runEnv is run with env added to the cli's environment.
func (c *cli) runEnv(env []string, args ...string) result {
	c.t.Helper()
	return c.runWith("", env, args...)
}

func (c *cli) runWith(dir string, env []string, args ...string) result {
	c.t.Helper()
	cmd := exec.Command(c.binary(), args...)
	cmd.Env, cmd.Dir = slices.Concat(c.env(), env), dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("agent-worker %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// startDaemon runs `agent-worker daemon` as a child of the test, with
// extraEnv added to its environment, and waits for it to publish
// daemon.json.
func (c *cli) startDaemon(extraEnv ...string) *exec.Cmd {
	c.t.Helper()
	cmd := exec.Command(c.binary(), "daemon")
	cmd.Env = append(c.env(), extraEnv...)
	cmd.SysProcAttr = c.daemonAttr
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.waitFor("daemon.json of pid "+strconv.Itoa(cmd.Process.Pid), func() bool {
		d, err := api.ReadDaemonInfo(c.home)
		return err == nil && d.PID == cmd.Process.Pid
	})
	return cmd
}

func (c *cli) stopDaemon() {
	if _, err := api.ReadDaemonInfo(c.home); err == nil {
		c.run("stop", "--all")
	}
}

// waitFor polls a condition the test cannot get an event for (another
// process's files), failing after a generous deadline.
func (c *cli) waitFor(what string, cond func() bool) {
	c.t.Helper()
	testkit.WaitFor(c.t, what, cond)
}

func (c *cli) listJSON() []api.Agent {
	c.t.Helper()
	var l api.AgentList
	if err := json.Unmarshal([]byte(c.ok("list", "--json")), &l); err != nil {
		c.t.Fatalf("list --json: %v", err)
	}
	return l.Agents
}

// The seed's step-1 check: daemon → SQLite file → HTTP → new alice → stop →
// start again → list still shows alice with the same config.
func TestE2EAgentSurvivesDaemonRestart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	if _, err := os.Stat(filepath.Join(c.home, api.DBFile)); err != nil {
		t.Fatalf("no SQLite file after start: %v", err)
	}
	var st struct {
		Running bool `json:"running"`
		PID     int  `json:"pid"`
	}
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &st); err != nil || !st.Running || st.PID != daemon.Process.Pid {
		t.Fatalf("status --json = %+v, %v; want running with pid %d", st, err, daemon.Process.Pid)
	}
	if out := c.ok("new", "alice", "--backend", "mock", "--system", "be brief"); out != "alice (mock)\n" {
		t.Errorf("new printed %q", out)
	}
	before := c.listJSON()

	if out := c.ok("stop", "--all"); !strings.Contains(out, "daemon stopped") {
		t.Errorf("stop --all printed %q", out)
	}
	if err := daemon.Wait(); err != nil {
		t.Errorf("daemon exit after stop --all: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json left after clean stop: %v", err)
	}
	if out := c.ok("status"); !strings.Contains(out, "not running") {
		t.Errorf("status with no daemon printed %q", out)
	}

	after := c.listJSON() // starts a new daemon in the background
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("agents after restart (-before +after):\n%s", diff)
	}
	if len(after) != 1 || after[0].Name != "alice" || after[0].Backend != "mock" || after[0].System != "be brief" {
		t.Errorf("after restart: %+v", after)
	}
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil || d.PID == daemon.Process.Pid {
		t.Errorf("auto-started daemon: %+v, %v", d, err)
	}
	if _, err := os.Stat(filepath.Join(c.home, api.LogDir, "daemon.log")); err != nil {
		t.Errorf("auto-started daemon has no log file: %v", err)
	}
}

func TestE2ESecondDaemonRefused(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	first := c.startDaemon()
	r := c.run("daemon")
	if r.code != api.ExitConflict {
		t.Errorf("second daemon exit = %d, want %d", r.code, api.ExitConflict)
	}
	if want := fmt.Sprintf("pid %d", first.Process.Pid); !strings.Contains(r.stderr, want) {
		t.Errorf("second daemon stderr %q does not name %s", r.stderr, want)
	}
	// The first one is unharmed.
	c.ok("list")
}

func TestE2EKilledDaemonLeavesStaleFile(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("new", "alice", "--backend", "mock")
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	stale, err := api.ReadDaemonInfo(c.home)
	if err != nil || stale.PID != daemon.Process.Pid {
		t.Fatalf("after kill -9, daemon.json = %+v, %v; want the dead daemon's file", stale, err)
	}
	if out := c.ok("status"); !strings.Contains(out, "not running") {
		t.Errorf("status with a stale daemon.json printed %q", out)
	}
	agents := c.listJSON()
	if len(agents) != 1 || agents[0].Name != "alice" {
		t.Errorf("agents after kill -9 and restart: %+v", agents)
	}
	fresh, err := api.ReadDaemonInfo(c.home)
	if err != nil || fresh.PID == stale.PID || fresh.Token == stale.Token {
		t.Errorf("stale daemon.json not replaced: %+v, %v", fresh, err)
	}
}

func TestE2EErrorsAndExitCodes(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock")
	tests := map[string]struct {
		args []string
		code int
		says string
	}{
		"unknown agent":     {[]string{"info", "nobody"}, api.ExitNotFound, `agent "nobody@global:main" not found`},
		"stop unknown":      {[]string{"stop", "ghost@wf:t"}, api.ExitNotFound, "not found"},
		"duplicate":         {[]string{"new", "alice", "--backend", "mock"}, api.ExitConflict, "already exists"},
		"invalid name":      {[]string{"new", "9lives", "--backend", "mock"}, api.ExitUsage, "use a letter"},
		"bad target":        {[]string{"info", "a@b@c"}, api.ExitUsage, "more than one '@'"},
		"schedule too tiny": {[]string{"new", "bob", "--backend", "mock", "--schedule", "1ms"}, api.ExitUsage, "at least"},
		"unknown backend":   {[]string{"new", "bob", "--backend", "gpt"}, api.ExitUsage, "use one of"},
		"config env typed":  {[]string{"new", "bob", "--backend", "mock", "--config", `{"env":{"A":1}}`}, api.ExitUsage, "--config: config env: want an object of strings"},
		"unknown flag":      {[]string{"new", "bob", "--bogus"}, api.ExitUsage, "bogus"},
		"missing argument":  {[]string{"info"}, api.ExitUsage, "usage: agent-worker info"},
		"extra argument":    {[]string{"list", "extra"}, api.ExitUsage, "usage: agent-worker list"},
		"unknown command":   {[]string{"frobnicate"}, api.ExitUsage, "frobnicate"},
		"target vs flag":    {[]string{"new", "bob@review", "--workflow", "other", "--backend", "mock"}, api.ExitUsage, "--workflow"},
		"missing file":      {[]string{"new", "bob", "--backend", "mock", "--system-file", "/nonexistent"}, api.ExitUsage, "--system-file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := c.run(tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Errorf("agent-worker %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.says)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); tc.code != api.ExitUsage && n != 0 {
				t.Errorf("error is %d lines, want one: %q", n+1, r.stderr)
			}
		})
	}
	if got := c.listJSON(); len(got) != 1 {
		t.Errorf("failed commands changed the agents: %+v", got)
	}
}

func TestE2EUnreachableDaemon(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	// A live pid (this test) but nothing listening: the daemon is wedged or
	// the file lies; the CLI must say so, not hang or start a second daemon.
	if err := api.WriteDaemonInfo(c.home, api.DaemonInfo{PID: os.Getpid(), Host: "127.0.0.1", Port: 1, Token: "x"}); err != nil {
		t.Fatal(err)
	}
	r := c.run("list")
	if r.code != api.ExitUnreachable || !strings.Contains(r.stderr, "no daemon answered") {
		t.Errorf("list against a dead address: exit %d, stderr %q; want %d, no daemon answered", r.code, r.stderr, api.ExitUnreachable)
	}
	os.Remove(filepath.Join(c.home, api.DaemonFile))
}

func TestE2EHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	c := &cli{t: t, home: t.TempDir()}
	for _, cmd := range []string{"daemon", "status", "new", "list", "ls", "info", "stop", "send", "peek", "mcp-config", "doc read", "doc write", "doc append", "doc list", "proposals", "ask", "serve", "plugins", "backends", "resume", "schedule", "pause", "cancel", "workflows", "budget", "tasks", "tasks add", "tasks show"} {
		r := c.run(append(strings.Fields(cmd), "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "USAGE") || !strings.Contains(r.stdout, "agent-worker "+cmd) || r.stderr != "" {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q; want the help on stdout", cmd, r.code, r.stdout, r.stderr)
		}
	}
	if r := c.run("--help"); r.code != 0 || !strings.Contains(r.stdout, "AGENT COMMANDS") || r.stderr != "" {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--help started a daemon")
	}
}

func TestE2EFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice@review:pr-1", "--backend", "mock")
	cmd := exec.Command(binary, "info", "alice@review:pr-1")
	cmd.Env = append(c.env(), "AGENT_WORKER_JSON=true")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var a api.Agent
	if err := json.Unmarshal(out, &a); err != nil || a.Target != "alice@review:pr-1" {
		t.Errorf("AGENT_WORKER_JSON=true info: %q (%v); want JSON for alice@review:pr-1", out, err)
	}
	// Text output when the variable is absent, and the scope shows the member.
	if out := c.ok("info", "@review:pr-1"); !strings.Contains(out, "alice") {
		t.Errorf("info @review:pr-1 = %q, want it to list alice", out)
	}
	if out := c.ok("stop", "@review:pr-1"); !strings.Contains(out, "stopped: @review:pr-1") {
		t.Errorf("stop @review:pr-1 printed %q", out)
	}
	if a := c.agent("alice@review:pr-1"); a.State != "stopped" {
		t.Errorf("agent of a stopped workflow is %s, want stopped", a.State)
	}
}

// The daemon reads its flags from a YAML --config file too; a bad value in
// it is a usage error that names the flag.
func TestE2EDaemonConfigFile(t *testing.T) {
	t.Parallel()
	c := &cli{t: t, home: t.TempDir()}
	cfg := filepath.Join(t.TempDir(), "daemon.yaml")
	if err := os.WriteFile(cfg, []byte("poll-interval: forever\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.run("daemon", "--config", cfg)
	if r.code != api.ExitUsage || !strings.Contains(r.stderr, "poll-interval") {
		t.Errorf("bad config file: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a daemon with a bad config file started")
	}
	if out := c.ok("--version"); !strings.HasPrefix(out, "agent-worker ") {
		t.Errorf("--version printed %q", out)
	}
}

// Commands that find no daemon start one, and several at once on a fresh
// home share the daemon that wins the home's lock, however long it takes
// to get ready: here a plugin whose handshake takes two seconds holds the
// daemon's start-up well past the second a loser used to wait.
func TestE2EConcurrentCommandsShareTheDaemonTheyStart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	plugins := t.TempDir()
	if err := os.Symlink(mockPlugin, filepath.Join(plugins, "agent-worker-backend-mock")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plugins, "agent-worker-backend-slow"), "#!/bin/sh\nsleep 2\nexit 1\n")
	if err := os.Chmod(filepath.Join(plugins, "agent-worker-backend-slow"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.fixedEnv = slices.DeleteFunc(c.env(), func(kv string) bool { return strings.HasPrefix(kv, "AGENT_WORKER_PLUGINS_DIR=") })
	c.fixedEnv = append(c.fixedEnv, "AGENT_WORKER_PLUGINS_DIR="+plugins)
	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = c.run("list", "--json") })
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("command %d of %d started together: exit %d\nstderr: %s", i+1, len(results), r.code, r.stderr)
		}
	}
	if pids := testkit.Pids(t, func(pid int) bool {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return err == nil && testkit.RunsBinary(pid, binary) && strings.Contains(string(cmdline), "\x00daemon\x00") &&
			strings.Contains(string(cmdline), c.home)
	}); len(pids) != 1 {
		t.Errorf("%d daemons run on the home, want 1: %v", len(pids), pids)
	}
}
