package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// A daemon built as a release is (make dist: no agentworker_testhooks
// tag) ignores the AGENT_WORKER_TEST_* switches whatever its environment
// holds (issue 40): told its kernel has no Landlock and its runs no
// cgroups, it still reports the sandbox on, and a run still cannot read
// the owner's token in daemon.json.
func TestE2EReleaseBuildIgnoresTestSwitches(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	c.exe = testkit.ReleaseBuild(t, "cmd/agent-worker")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	daemon := c.startDaemon(testNoLandlock+"=set by an attacker", testNoCgroups+"=set by an attacker",
		testPauseBeforeSettle+"="+filepath.Join(t.TempDir(), "marker"),
		testParent+"="+strconv.Itoa(gone.Process.Pid)) // a test process that has ended
	status := c.ok("status")
	if !strings.Contains(status, "sandbox:   on (landlock ABI") || strings.Contains(status, "set by an attacker") {
		t.Fatalf("a release daemon obeyed a test switch; status:\n%s", status)
	}

	home := realPath(t, c.home)
	script := []map[string]any{
		{"shell": "cat " + filepath.Join(home, "daemon.json") + " || echo REFUSED"},
		{"result": "done"},
	}
	cfg, _ := json.Marshal(map[string]any{"script": script})
	c.ok("new", "prober", "--backend", "mock", "--config", string(cfg))
	// A run that paused before its settle (the third switch) would never
	// answer: ask returning, and the run settled, show it was ignored.
	c.ok("ask", "prober", "try")
	a := c.agent("prober")
	if len(a.Runs) == 0 || a.Runs[0].State != "succeeded" {
		t.Fatalf("prober's runs: %+v", a.Runs)
	}
	logs := c.ok("logs", a.Runs[0].ID)
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs, d.Token) || !strings.Contains(outputOf(logs), "REFUSED") {
		t.Errorf("a run of a release daemon with the test switches set read daemon.json:\n%s", logs)
	}
	// Its "test process" ended before it started: a daemon that obeyed
	// would have stopped within a second, long before this.
	if d.PID != daemon.Process.Pid || !testkit.Alive(daemon.Process.Pid) {
		t.Errorf("the release daemon (pid %d) stopped with the process %s named; daemon.json names pid %d", daemon.Process.Pid, testParent, d.PID)
	}
}

// A test killed by its timeout leaves no daemon or plugin process behind
// (issue 41): a daemon auto-started by a command of a test process, which
// names itself in AGENT_WORKER_TEST_PARENT as TestMain does, stops cleanly
// once that process is killed with SIGKILL, and the plugin process of its
// hanging run ends with it. Here a shell stands in for the test process.
func TestE2EDaemonEndsWithItsTestProcess(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cfg := `{"script":[{"hang":true}]}`
	test := exec.Command("sh", "-c", `export `+testParent+`=$$ && "$0" new hanger --backend mock --config "$1" && "$0" send hanger go && exec sleep 600`,
		c.binary(), cfg)
	test.Env = c.env()
	var out bytes.Buffer
	test.Stdout, test.Stderr = &out, &out
	if err := test.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { test.Process.Kill() })
	exited := make(chan struct{})
	go func() { test.Wait(); close(exited) }() // reaps it, so that its end shows as its absence

	// The daemon runs, hanger's run with it, in a plugin process.
	var daemonPID int
	c.waitFor("a daemon started by the stand-in test process, running hanger's run", func() bool {
		select {
		case <-exited:
			t.Fatalf("the stand-in test process exited: %s", out.String())
		default:
		}
		d, err := api.ReadDaemonInfo(c.home)
		if err != nil || !testkit.Alive(d.PID) || c.run("info", "hanger").code != 0 {
			return false
		}
		daemonPID = d.PID
		a := c.agent("hanger")
		return len(a.Runs) > 0 && a.Runs[0].State == api.RunRunning
	})
	children := testkit.Pids(t, func(pid int) bool { p, ok := testkit.ReadProc(pid); return ok && p.PPID == daemonPID })
	if len(children) == 0 {
		t.Fatalf("the daemon (pid %d) runs hanger's run but has no child process", daemonPID)
	}

	if err := test.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	testkit.WaitGone(t, daemonPID)
	for _, pid := range children {
		testkit.WaitGone(t, pid)
	}
	// A clean stop, as with stop --all: the daemon removed its file.
	if _, err := os.Stat(filepath.Join(c.home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json left after the daemon ended with its test process: %v", err)
	}
	if log, err := os.ReadFile(filepath.Join(c.home, api.LogDir, "daemon.log")); err != nil ||
		!strings.Contains(string(log), "the test process that started this daemon has ended: stopping") {
		t.Errorf("the daemon's log does not say why it stopped (%v):\n%s", err, log)
	}
}

// A variable a workflow names explicitly reaches that agent's runs even
// when its name is outside the daemon's allow-list (issue 40): the docs'
// own example, provider {name: vllm, api_key_env: VLLM_KEY}, calls its
// endpoint with the key, while another agent's run sees neither that
// variable nor any other of the daemon's that no definition names.
func TestE2ENamedVariablesReachTheirAgentOnly(t *testing.T) {
	t.Parallel()
	m := startModel(t, false, modelTurn{"Text": "vllm answers"})
	c := newCLI(t)
	c.startDaemon("VLLM_KEY=vllm-test-key", "SOME_DAEMON_SECRET=daemon-secret")
	dir := t.TempDir()
	wf := filepath.Join(dir, "keys.yaml")
	writeFile(t, wf, `name: keys
agents:
  local:
    backend: sdk
    model: qwen2.5-coder
    provider: {name: vllm, base_url: `+m.URL+`/v1, api_key_env: VLLM_KEY}
  other:
    backend: mock
    config:
      script:
        - shell: 'echo "VLLM_KEY=${VLLM_KEY:-unset} SOME_DAEMON_SECRET=${SOME_DAEMON_SECRET:-unset}"'
        - result: done
`)
	c.ok("start", wf, "--background")
	if out := c.ok("ask", "local@keys", "hello"); !strings.Contains(out, "vllm answers") {
		t.Fatalf("ask local printed %q", out)
	}
	reqs := m.requests(t)
	if len(reqs) == 0 || reqs[0].Header.Get("Authorization") != "Bearer vllm-test-key" {
		t.Fatalf("the vllm endpoint was not called with VLLM_KEY: %+v", reqs)
	}
	c.ok("ask", "other@keys", "show me")
	a := c.agent("other@keys")
	if len(a.Runs) == 0 {
		t.Fatal("other@keys has no run")
	}
	if logs := c.ok("logs", a.Runs[0].ID); !strings.Contains(logs, "VLLM_KEY=unset SOME_DAEMON_SECRET=unset") {
		t.Errorf("another agent's run saw a variable no definition of it names:\n%s", logs)
	}
}

// When a vital loop of the daemon ends with an error, the daemon does not
// go on answering without it (issue 42): it stops, saying which loop and
// why, with a non-zero exit status for its service manager to restart it,
// and leaves no daemon.json behind.
func TestE2EDaemonStopsWhenTheSchedulerStops(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cmd := exec.Command(c.binary(), "daemon")
	cmd.Env = append(c.env(), testFailLoop+"=scheduler")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("daemon with its scheduler stopped: %v, want exit status 1\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "the scheduler stopped: test hook") {
		t.Errorf("the daemon's output does not name the scheduler:\n%s", logs.String())
	}
	if _, err := api.ReadDaemonInfo(c.home); err == nil {
		t.Errorf("daemon.json is still there after the daemon stopped")
	}
}
