package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
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
	c.startDaemon(testNoLandlock+"=set by an attacker", testNoCgroups+"=set by an attacker",
		testPauseBeforeSettle+"="+filepath.Join(t.TempDir(), "marker"))
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
	if strings.Contains(logs, d.Token) || !strings.Contains(logs, "REFUSED") {
		t.Errorf("a run of a release daemon with the test switches set read daemon.json:\n%s", logs)
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
