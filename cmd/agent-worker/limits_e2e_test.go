package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// limitsOrSkip starts a daemon in a cgroup of the test's own and skips
// the test, saying why, unless the daemon enforces the named limit there.
func limitsOrSkip(t *testing.T, c *cli, limit string) {
	t.Helper()
	c.daemonAttr = privateCgroup(t)
	if c.daemonAttr == nil {
		t.Skip("no cgroup v2 here that the test may make cgroups in: the daemon can enforce no run limits")
	}
	c.startDaemon()
	var h api.Health
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	for _, u := range h.Processes.Unenforced {
		if strings.HasPrefix(u, limit+" ") {
			t.Skipf("the daemon cannot enforce %s limits here: %s", limit, u)
		}
	}
	if !strings.Contains(h.Processes.Limits, "enforced: ") || !strings.Contains(h.Processes.Limits, limit+" (cgroup v") {
		t.Fatalf("status says nothing of enforcing %s: %q", limit, h.Processes.Limits)
	}
}

// A run is a fork bomb: it starts sleepers until it cannot (at most 3000,
// so a broken limit cannot take the machine; they die with the run's
// cgroup either way). Its limits: {pids: 64} stops it, the run fails, not
// retried, with the reason in its transcript and the agent's error, and
// the daemon and another agent keep working (issue 40, item 3).
func TestE2ELimitStopsForkBomb(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	limitsOrSkip(t, c, "pids")
	if status := c.ok("status"); !strings.Contains(status, "limits:    pids 4096, memory max, cpu max per run") {
		t.Errorf("status does not show the default limits:\n%s", status)
	}

	bomb := `i=0; while [ $i -lt 3000 ]; do sleep 120 & i=$((i+1)); done; echo "started all $i"`
	cfg, _ := json.Marshal(map[string]any{"limits": map[string]any{"pids": 64},
		"script": []map[string]any{{"shell": bomb}, {"result": "bombed"}}})
	c.ok("new", "bomb", "--backend", "mock", "--config", string(cfg))
	c.ok("new", "calm", "--backend", "mock", "--config", mockConfig(t, map[string]any{"result": "still here"}))

	r := c.run("serve", "bomb", "go")
	if r.code == 0 {
		t.Fatalf("the fork bomb's run succeeded: %s", r.stdout)
	}
	const reason = "the run hit its process limit (pids 64: "
	if !strings.Contains(r.stderr, reason) {
		t.Errorf("serve's error does not say the run hit its limit:\n%s", r.stderr)
	}
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "bomb", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 1 || l.Runs[0].State != api.RunFailed || !strings.Contains(l.Runs[0].Error, reason) {
		t.Fatalf("want one failed run (not retried) with the reason, got %+v", l.Runs)
	}
	run := l.Runs[0].ID
	logs := c.ok("logs", run)
	if !strings.Contains(logs, reason) || strings.Contains(logs, "started all 3000") {
		t.Errorf("the transcript does not show the bomb stopped at its limit:\n%s", logs)
	}
	if m := regexp.MustCompile(`started all ([0-9]+)`).FindStringSubmatch(logs); m != nil {
		t.Logf("the shell got as far as %s sleepers", m[1])
	}
	for _, a := range c.listJSON() {
		if a.Name == "bomb" && !strings.Contains(a.Error, reason) {
			t.Errorf("the agent's error does not say why: %q", a.Error)
		}
	}

	// The daemon and the other agent work on; a run of the same binary
	// that stays under the limit succeeds.
	if out := c.ok("serve", "calm", "hello"); !strings.Contains(out, "still here") {
		t.Errorf("calm's run: %s", out)
	}
	cfg, _ = json.Marshal(map[string]any{"limits": map[string]any{"pids": 64},
		"script": []map[string]any{{"shell": "for i in 1 2 3 4 5; do sleep 0.01 & done; wait; echo five"}, {"result": "five children"}}})
	c.ok("new", "modest", "--backend", "mock", "--config", string(cfg))
	if out := c.ok("serve", "modest", "go"); !strings.Contains(out, "five children") {
		t.Errorf("a run under its limit: %s", out)
	}
}

// A run that allocates past limits: {memory: 64M} is killed out of
// memory, and its transcript and error say so.
func TestE2ELimitMemory(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	limitsOrSkip(t, c, "memory")
	// tail keeps a line whole in memory: /dev/zero has no newline.
	cfg, _ := json.Marshal(map[string]any{"limits": map[string]any{"memory": "64M"},
		"script": []map[string]any{{"shell": "head -c 300000000 /dev/zero | tail -n 1 | wc -c"}, {"result": "allocated"}}})
	c.ok("new", "hog", "--backend", "mock", "--config", string(cfg))
	r := c.run("serve", "hog", "go")
	const reason = "the run hit its memory limit (memory 64M: "
	if r.code == 0 || !strings.Contains(r.stderr, reason) {
		t.Fatalf("serve = %d, %s %s; want the run failed at its memory limit", r.code, r.stdout, r.stderr)
	}
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "hog", "--json")), &l); err != nil || len(l.Runs) != 1 {
		t.Fatalf("runs: %+v, %v", l, err)
	}
	if logs := c.ok("logs", l.Runs[0].ID); !strings.Contains(logs, reason) {
		t.Errorf("the transcript does not say why:\n%s", logs)
	}
}

// Without a cgroup per run (the subreaper fallback) no limit can be
// enforced: status and doctor say so.
func TestE2ELimitsWithoutCgroups(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon(testNoCgroups+"=disabled by the test", "AGENT_WORKER_RUN_LIMITS=pids=512")
	if status := c.ok("status"); !strings.Contains(status, "limits:    pids 512, memory max, cpu max per run unless its agent sets limits:; none enforced") {
		t.Errorf("status does not say the limits are not enforced:\n%s", status)
	}
	r := c.run("doctor")
	if !regexp.MustCompile(`(?m)^.*warn.*limits.*none enforced`).MatchString(r.stdout) {
		t.Errorf("doctor does not warn that limits are not enforced:\n%s", r.stdout)
	}
}
