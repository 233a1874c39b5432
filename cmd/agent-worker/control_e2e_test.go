package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// agentNamed finds one agent in `list --json`.
func (c *cli) agentNamed(name string) api.Agent {
	c.t.Helper()
	for _, a := range c.listJSON() {
		if a.Name == name {
			return a
		}
	}
	c.t.Fatalf("no agent %s in list", name)
	return api.Agent{}
}

// pause, resume and cancel from the CLI against a daemon running mock
// agents: what each prints, with --json, and the errors that change
// nothing.
func TestE2EPauseResumeCancel(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock", "--config", `{"script":[{"hang":true,"when":{"text":"hang"}},{"result":"ok"}]}`)

	// pause: the state shows in list and info; messages wait.
	var st api.Status
	if err := json.Unmarshal([]byte(c.ok("pause", "alice", "--json")), &st); err != nil || st.Status != "paused" || st.Target != "alice" {
		t.Errorf("pause --json = %+v, %v", st, err)
	}
	if a := c.agentNamed("alice"); a.State != "paused" {
		t.Errorf("list after pause: %s", a.State)
	}
	if out := c.ok("info", "alice"); !strings.Contains(out, "paused") {
		t.Errorf("info after pause:\n%s", out)
	}
	c.ok("send", "alice", "hello")
	if a := c.agentNamed("alice"); a.InboxDepth != 1 || a.State != "paused" {
		t.Errorf("paused alice after a message: %s, inbox %d", a.State, a.InboxDepth)
	}
	if out := c.ok("resume", "alice"); out != "resumed: alice\n" {
		t.Errorf("resume printed %q", out)
	}
	c.waitFor("alice to read her inbox", func() bool { return c.agentNamed("alice").InboxDepth == 0 })
	if r := c.run("resume", "alice"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "nothing to resume") {
		t.Errorf("resume of an idle agent: exit %d, %q", r.code, r.stderr)
	}

	// A workflow: pause @global holds it; status shows it; resume lets go.
	if out := c.ok("pause", "@global"); out != "paused: @global\n" {
		t.Errorf("pause @global printed %q", out)
	}
	if out := c.ok("status"); !strings.Contains(out, "@global (paused)") {
		t.Errorf("status after pause @global:\n%s", out)
	}
	if err := json.Unmarshal([]byte(c.ok("resume", "@global", "--json")), &st); err != nil || st.Status != "resumed" || st.Target != "@global" {
		t.Errorf("resume @global --json = %+v, %v", st, err)
	}

	// cancel: by agent, then the finished run by id, then unknown ones.
	c.ok("send", "alice", "hang here")
	c.waitFor("alice's run to start", func() bool { return c.agentNamed("alice").State == "running" })
	var cancelled api.Cancelled
	if err := json.Unmarshal([]byte(c.ok("cancel", "alice", "--json")), &cancelled); err != nil || cancelled.Status != "cancelled" || !isRunID(cancelled.Run) {
		t.Fatalf("cancel --json = %+v, %v", cancelled, err)
	}
	if a := c.agentNamed("alice"); a.State != "idle" || a.InboxDepth != 1 {
		t.Errorf("alice after cancel: %s, inbox %d; want idle with the message unread", a.State, a.InboxDepth)
	}
	if r := c.run("cancel", cancelled.Run); r.code != api.ExitConflict || !strings.Contains(r.stderr, "already ended (cancelled)") {
		t.Errorf("cancel of a finished run: exit %d, %q", r.code, r.stderr)
	}
	if r := c.run("cancel", "run_0123456789abcdef"); r.code != api.ExitNotFound {
		t.Errorf("cancel of an unknown run: exit %d, %q", r.code, r.stderr)
	}
	if r := c.run("cancel", "alice"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "no run in flight") {
		t.Errorf("cancel of an idle agent: exit %d, %q", r.code, r.stderr)
	}
	if r := c.run("pause", "nobody"); r.code != api.ExitNotFound {
		t.Errorf("pause of an unknown agent: exit %d, %q", r.code, r.stderr)
	}
}

// budget from the CLI: a standalone agent stops at its run cap with the
// notice in its channel; raising the cap and resuming runs what waited;
// bad limits are usage errors that change nothing.
func TestE2EBudget(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock")
	if out := c.ok("budget", "alice", "set", "--runs", "1"); out != "alice: budget set\n" {
		t.Errorf("budget set printed %q", out)
	}
	c.ok("send", "alice", "one")
	c.waitFor("alice's first run", func() bool { return c.agentNamed("alice").InboxDepth == 0 })
	c.ok("send", "alice", "two")
	c.waitFor("alice over budget", func() bool { return c.agentNamed("alice").State == api.AgentOverBudget })
	if a := c.agentNamed("alice"); a.InboxDepth != 1 {
		t.Errorf("alice over budget has %d unread, want the second message waiting", a.InboxDepth)
	}
	if out := c.ok("peek", "@global"); !strings.Contains(out, "alice is over its budget: runs: 1 of 1") {
		t.Errorf("no budget notice in the channel:\n%s", out)
	}
	c.ok("budget", "alice", "set", "--runs", "5")
	c.ok("resume", "alice")
	c.waitFor("alice runs the waiting message", func() bool { return c.agentNamed("alice").InboxDepth == 0 })
	if out := c.ok("budget", "alice", "clear", "--json"); !strings.Contains(out, `"status": "budget clear"`) {
		t.Errorf("budget clear --json printed %q", out)
	}
	for args, says := range map[string]string{
		"budget alice set --usd -1":    `--usd "-1": give a number of dollars, 0 or more`,
		"budget alice set --runs many": `--runs "many": give a whole number`,
		"budget alice set":             "needs a limit",
		"budget alice raise":           "usage: agent-worker budget",
	} {
		if r := c.run(strings.Fields(args)...); r.code != api.ExitUsage || !strings.Contains(r.stderr, says) {
			t.Errorf("%s: exit %d, %q; want usage saying %q", args, r.code, r.stderr, says)
		}
	}
	if r := c.run("budget", "nobody", "set", "--runs", "1"); r.code != api.ExitNotFound {
		t.Errorf("budget of an unknown agent: exit %d, %q", r.code, r.stderr)
	}
}
