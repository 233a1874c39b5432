package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// A run cannot change what runs may do (issue 40, item 1). A mock agent
// of a workflow without git worktrees works in the workflow file's
// folder, and its shell step copies over the workflow file a version
// that widens its own sandbox, as an attacker would. The daemon's hot
// reload holds it: the next run is still confined (it cannot read
// daemon.json), and status, workflows and workflows --json show the
// edit waiting with how it widens the policy. A daemon restart keeps it
// waiting and compares a file edited while it was down (a new write
// path) the same way. `workflows accept` applies exactly the version
// shown: the write path, then sandbox mode off, after which a run reads
// daemon.json as the owner wished. An edit that narrows the policy
// again applies at once.
func TestE2EWorkflowEditWideningWaitsForOwner(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	daemon := c.startDaemon()
	home := realPath(t, c.home)
	dir := realPath(t, t.TempDir())
	extra := realPath(t, t.TempDir())
	file, next := filepath.Join(dir, "team.yaml"), filepath.Join(dir, "next.yaml")
	version := func(sandbox string) string {
		v := fmt.Sprintf(`name: team
agents:
  evil:
    backend: mock
    config:
      script:
        - shell: "echo == probe; cat %s"
        - shell: "echo == plant; echo planted > %s/planted && echo wrote-extra"
        - shell: "echo == rewrite; cp next.yaml team.yaml && echo copied"
        - result: done
`, filepath.Join(home, api.DaemonFile), extra)
		if sandbox != "" {
			v += "    sandbox: " + sandbox + "\n"
		}
		return v
	}
	confined, open, wider := version(""), version("{mode: off}"), version("{write: ["+extra+"]}")
	writeFile(t, file, confined)
	writeFile(t, next, open) // what the run will copy over its own workflow file
	c.ok("start", file, "--background")

	// run asks evil for a run and returns its transcript.
	run := func() string {
		t.Helper()
		c.ok("ask", "evil@team", "go")
		a := c.agent("evil@team")
		if len(a.Runs) == 0 {
			t.Fatalf("evil has no runs")
		}
		return c.ok("logs", a.Runs[0].ID)
	}
	workflow := func() api.Workflow {
		t.Helper()
		var l api.WorkflowList
		if err := json.Unmarshal([]byte(c.ok("workflows", "--json")), &l); err != nil {
			t.Fatal(err)
		}
		for _, w := range l.Workflows {
			if w.Target == "@team" {
				return w
			}
		}
		t.Fatalf("no @team in workflows --json")
		return api.Workflow{}
	}
	waitsWith := func(reason string) {
		t.Helper()
		c.waitFor("the edit waiting for the owner ("+reason+")", func() bool {
			w := workflow()
			return w.Pending != nil && strings.Contains(strings.Join(w.Pending.Widens, "\n"), reason)
		})
	}
	confinedRun := func(when string) {
		t.Helper()
		os.Remove(filepath.Join(extra, "planted")) // an accepted version's run may have written it
		logs := run()
		out := outputOf(logs) // what the commands printed, not the commands
		token := mustDaemonInfo(t, c).Token
		if strings.Contains(logs, token) || !strings.Contains(between(out, "== probe", "== "), "Permission denied") {
			t.Errorf("%s: the run was not confined: it read daemon.json or was not refused it:\n%s", when, logs)
		}
		if _, err := os.Stat(filepath.Join(extra, "planted")); err == nil || strings.Contains(out, "wrote-extra") {
			t.Errorf("%s: the run wrote %s, which no accepted version grants", when, extra)
		}
	}

	// The attack: the run rewrites its workflow file with mode: off.
	confinedRun("the run that rewrites its file")
	waitsWith("agent evil: sandbox mode off: its runs are not confined")
	confinedRun("the run after the rewrite")
	if a := c.agent("evil@team"); a.Config.Sandbox != nil {
		t.Errorf("the held edit reached the agent: sandbox %+v", a.Config.Sandbox)
	}
	out := c.ok("workflows")
	for _, want := range []string{"@team: an edit of " + file + " waits for you", "  + agent evil: sandbox mode off", "agent-worker workflows accept @team"} {
		if !strings.Contains(out, want) {
			t.Errorf("workflows does not show %q:\n%s", want, out)
		}
	}
	if out := c.ok("status"); !strings.Contains(out, "workflow @team: an edit of "+file+" widens what its runs may do") || !strings.Contains(out, "workflows accept @team") {
		t.Errorf("status does not list the edit waiting:\n%s", out)
	}

	// A restart keeps the edit waiting, and a file edited while no daemon
	// watched (a new write path) waits as well, in its place.
	c.ok("stop", "--all")
	if err := daemon.Wait(); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	writeFile(t, next, wider)
	writeFile(t, file, wider)
	c.startDaemon()
	waitsWith("agent evil: sandbox write adds " + extra)
	confinedRun("the run after a restart")

	// The owner accepts: exactly what was shown applies.
	if out := c.ok("workflows", "accept", "@team"); !strings.Contains(out, "accepted: @team") {
		t.Errorf("workflows accept printed %q", out)
	}
	if w := workflow(); w.Pending != nil {
		t.Errorf("after accept the edit still waits: %+v", w.Pending)
	}
	if logs := run(); !strings.Contains(outputOf(logs), "wrote-extra") {
		t.Errorf("after accepting the write path the run could not write it:\n%s", logs)
	}
	if r := c.run("workflows", "accept", "@team"); r.code == 0 || !strings.Contains(r.stderr, "no edit waiting") {
		t.Errorf("a second accept: exit %d, %q; want a refusal saying nothing waits", r.code, r.stderr)
	}

	// mode: off, by the run again; accepted, the owner gets what he asked.
	writeFile(t, next, open)
	run()
	waitsWith("agent evil: sandbox mode off")
	var accepted api.Workflow
	if err := json.Unmarshal([]byte(c.ok("workflows", "accept", "team", "--json")), &accepted); err != nil || accepted.Target != "@team" || accepted.Pending != nil {
		t.Errorf("workflows accept --json = %+v, %v", accepted, err)
	}
	if logs := run(); !strings.Contains(logs, mustDaemonInfo(t, c).Token) {
		t.Errorf("after accepting mode: off the run is still confined:\n%s", logs)
	}

	// Narrowing applies at once, without the owner.
	writeFile(t, next, confined)
	writeFile(t, file, confined)
	c.waitFor("the narrowing edit to apply", func() bool { return c.agent("evil@team").Config.Sandbox == nil })
	if w := workflow(); w.Pending != nil || w.Error != "" {
		t.Errorf("the narrowing edit waits or was rejected: %+v, %q", w.Pending, w.Error)
	}
	confinedRun("the run after the narrowing edit")
}

// mustDaemonInfo reads c's daemon.json.
func mustDaemonInfo(t *testing.T, c *cli) api.DaemonInfo {
	t.Helper()
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// No run may write a folder the daemon executes programs from (issue 40,
// item 1): a write grant naming the folder of the agent-worker binary is
// refused with what to do, and so is a workflow whose own folder holds a
// plugins folder; a run's attempt to drop an agent-worker-backend-x beside
// the binary is refused by the kernel, and the catalog never lists it.
func TestE2ESandboxPluginFoldersNeverWritable(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	c.startDaemon()
	binDir := realPath(t, filepath.Dir(binary))
	drops := realPath(t, pluginsDir)

	grant := filepath.Join(t.TempDir(), "grant.yaml")
	writeFile(t, grant, "name: grant\nagents:\n  a:\n    backend: mock\n    config: {script: [{result: ran}]}\n    sandbox: {write: ["+binDir+"]}\n")
	c.ok("start", grant, "--background")
	// The workflow's own folder holds the plugins folder the daemon was
	// given (like a checkout holding plugins.d).
	holder := filepath.Join(filepath.Dir(drops), fmt.Sprintf("holder-%d.yaml", os.Getpid()))
	writeFile(t, holder, "name: holder\nagents:\n  b:\n    backend: mock\n    config: {script: [{result: ran}]}\n")
	t.Cleanup(func() { os.Remove(holder) })
	c.ok("start", holder, "--background")
	for target, folder := range map[string]string{"a@grant": binDir, "b@holder": drops} {
		r := c.run("ask", target, "go")
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "the daemon executes the programs in "+folder) || !strings.Contains(r.stderr+r.stdout, "--plugins-dir") {
			t.Errorf("ask %s: exit %d\nstdout %s\nstderr %s\nwant the run refused, naming %s and what to do", target, r.code, r.stdout, r.stderr, folder)
		}
	}

	planted := filepath.Join(binDir, "agent-worker-backend-x")
	t.Cleanup(func() { os.Remove(planted) })
	// A plugin of the run's own making (the run cannot read the daemon's
	// plugins to copy one: the write must be what the kernel refuses).
	cfg, _ := json.Marshal(map[string]any{"script": []map[string]any{
		{"shell": "echo == plant; printf '#!/bin/sh\\nexit 0\\n' > " + planted + " && chmod +x " + planted + " && echo PLANTED"},
		{"result": "tried"},
	}})
	c.ok("new", "planter", "--backend", "mock", "--config", string(cfg))
	c.ok("ask", "planter", "go")
	logs := c.ok("logs", c.agent("planter").Runs[0].ID)
	if out := outputOf(logs); strings.Contains(out, "PLANTED") || !strings.Contains(out, planted+": Permission denied") {
		t.Errorf("the run was not refused the binary's folder:\n%s", logs)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("the run planted %s", planted)
	}
	if out := c.ok("plugins"); strings.Contains(out, "backend-x") || strings.Contains(out, " x ") {
		t.Errorf("the catalog lists a planted plugin:\n%s", out)
	}
}

// --sandbox required refuses an agent whose sandbox is off (issue 40,
// item 1): a workflow that says so is refused on start with its line, an
// edit that turns it off waits for the owner and is refused when he
// accepts it (the last version keeps running; status shows both), and a
// standalone agent configured so is refused (its runs would be too:
// host/sandbox's TestModes).
func TestE2ESandboxRequiredRefusesModeOff(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	c.startDaemon("AGENT_WORKER_SANDBOX=required")
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	writeFile(t, off, "name: off\nagents:\n  a:\n    backend: mock\n    sandbox: {mode: off}\n")
	r := c.run("start", off, "--background")
	if r.code == 0 || !strings.Contains(r.stderr, "off.yaml:3: agent a: sandbox: {mode: off} is refused") || !strings.Contains(r.stderr, "--sandbox required") {
		t.Errorf("start of a workflow with mode: off under --sandbox required: exit %d, %q", r.code, r.stderr)
	}

	file := filepath.Join(dir, "team.yaml")
	writeFile(t, file, "name: team\nagents:\n  a:\n    backend: mock\n    config: {script: [{result: ran}]}\n")
	c.ok("start", file, "--background")
	writeFile(t, file, "name: team\nagents:\n  a:\n    backend: mock\n    config: {script: [{result: ran}]}\n    sandbox: {mode: off}\n")
	c.waitFor("the mode: off edit to wait", func() bool { return strings.Contains(c.ok("status"), "workflows accept @team") })
	r = c.run("workflows", "accept", "@team")
	if r.code == 0 || !strings.Contains(r.stderr, "--sandbox required") {
		t.Errorf("accepting mode: off under --sandbox required: exit %d, %q; want it refused", r.code, r.stderr)
	}
	if a := c.agent("a@team"); a.Config.Sandbox != nil {
		t.Errorf("the refused edit reached the agent: %+v", a.Config.Sandbox)
	}
	c.ok("ask", "a@team", "go") // the last accepted version keeps running

	r = c.run("new", "loose", "--backend", "mock", "--config", `{"sandbox": {"mode": "off"}, "script": [{"result": "ran"}]}`)
	if r.code == 0 || !strings.Contains(r.stderr, "sandbox mode off is refused") || !strings.Contains(r.stderr, "--sandbox required") {
		t.Errorf("new with mode: off under --sandbox required: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
