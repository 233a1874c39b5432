package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// pendingApproval waits for the one pending approval of agent and returns
// it.
func (c *cli) pendingApproval(agent string) api.Question {
	c.t.Helper()
	var q api.Question
	c.waitFor(agent+"'s approval", func() bool {
		for _, x := range c.questionsJSON(agent) {
			if x.Kind == "approval" && x.State == "pending" {
				q = x
				return true
			}
		}
		return false
	})
	return q
}

// Gated daemon tools wait for a person (issue 28, item 2): agent_spawn
// under spawn: true runs once approved, team_doc_write under tools: fails
// with the reason once denied, a gated call nobody decides fails after
// approval_timeout, and a pause ends a pending approval.
func TestE2EGatedToolsWaitForApproval(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	writeFile(t, file, `name: team
approval_timeout: 10m
agents:
  spawner:
    backend: mock
    can_spawn: true
    approvals: {spawn: true}
    config:
      script:
        - {tool: agent_spawn, args: {name: helper, system_prompt: "help", backend: mock}}
        - result: spawned
  writer:
    backend: mock
    approvals: {tools: [team_doc_write]}
    config:
      script:
        - {tool: team_doc_write, args: {content: "secret plan"}}
        - result: wrote
  sender:
    backend: mock
    approvals: {tools: [channel_send]}
    approval_timeout: 2s
    config:
      script:
        - {tool: channel_send, args: {message: "unapproved hello"}}
        - result: gave up
  pauser:
    backend: mock
    approvals: {tools: [my_status_set]}
    config:
      script:
        - {tool: my_status_set, args: {task: "waiting"}}
        - result: paused out
`)
	c.ok("start", file, "--background")

	// Approved: the spawn waits, then happens.
	c.ok("send", "spawner@team", "spawn a helper")
	q := c.pendingApproval("spawner@team")
	if !strings.HasPrefix(q.Question, `agent_spawn {"backend":"mock","name":"helper"`) || q.RunID == "" {
		t.Errorf("approval = %+v, want the exact spawn", q)
	}
	if out := c.ok("questions"); !strings.Contains(out, q.ID+"  approval  pending  spawner@team:main") || !strings.Contains(out, "agent-worker approve "+q.ID) {
		t.Errorf("questions:\n%s", out)
	}
	if s := c.agentState("spawner@team"); s != api.AgentRunning {
		t.Errorf("spawner while it waits: %s, want running", s)
	}
	if out := c.ok("list"); strings.Contains(out, "helper") {
		t.Errorf("helper exists before the spawn was approved:\n%s", out)
	}
	if r := c.run("answer", q.ID, "yes"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "is an approval") {
		t.Errorf("answer to an approval: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := c.ok("approve", q.ID); !strings.Contains(out, "approved "+q.ID+": spawner@team:main goes ahead") {
		t.Errorf("approve printed %q", out)
	}
	c.waitFor("the approved spawn", func() bool { return strings.Contains(c.ok("peek", "@team"), "[spawner] spawned") })
	if out := c.ok("list"); !strings.Contains(out, "helper") {
		t.Errorf("helper missing after the approved spawn:\n%s", out)
	}
	if r := c.run("deny", q.ID); r.code != api.ExitConflict || !strings.Contains(r.stderr, "was approved already, by user") {
		t.Errorf("deny after approve: exit %d, stderr %q", r.code, r.stderr)
	}

	// Denied: the write fails with the reason and writes nothing.
	c.ok("send", "writer@team", "write it")
	q = c.pendingApproval("writer@team")
	if out := c.ok("deny", q.ID, "--reason", "not the plan we agreed"); !strings.Contains(out, `fails with "not the plan we agreed"`) {
		t.Errorf("deny printed %q", out)
	}
	c.waitFor("the denied write's run to end", func() bool { return strings.Contains(c.ok("peek", "@team"), "[writer] wrote") })
	logs := c.ok("logs", c.agent("writer@team").Runs[0].ID)
	if !strings.Contains(logs, "denied by user: not the plan we agreed") {
		t.Errorf("the denied call's error is not in the transcript:\n%s", logs)
	}
	if r := c.run("doc", "read", "@team"); strings.Contains(r.stdout, "secret plan") {
		t.Errorf("the denied write happened:\n%s", r.stdout)
	}

	// Nobody decides: the call fails after approval_timeout.
	c.ok("send", "sender@team", "say hello")
	q = c.pendingApproval("sender@team")
	c.waitFor("the approval to expire", func() bool {
		for _, x := range c.questionsJSON("sender@team", "--all") {
			if x.ID == q.ID && x.State == "expired" {
				return true
			}
		}
		return false
	})
	c.waitFor("the expired call's run to end", func() bool { return strings.Contains(c.ok("peek", "@team"), "[sender] gave up") })
	if logs := c.ok("logs", c.agent("sender@team").Runs[0].ID); !strings.Contains(logs, "not approved within 2s") {
		t.Errorf("the expired call's error is not in the transcript:\n%s", logs)
	}
	if strings.Contains(c.ok("peek", "@team"), "[sender] unapproved hello") {
		t.Error("the unapproved message was sent")
	}

	// A pause ends the pending approval.
	c.ok("send", "pauser@team", "set your status")
	q = c.pendingApproval("pauser@team")
	c.ok("pause", "pauser@team")
	c.waitFor("the cancelled approval", func() bool {
		for _, x := range c.questionsJSON("pauser@team", "--all") {
			if x.ID == q.ID && x.State == "cancelled" {
				return true
			}
		}
		return false
	})
	if r := c.run("approve", q.ID); r.code != api.ExitConflict || !strings.Contains(r.stderr, fmt.Sprintf("question %s is cancelled", q.ID)) {
		t.Errorf("approve after the pause: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The sdk backend asks before a run_shell command its agent's approvals:
// shell patterns gate (issue 28, item 2), driven by the scripted model:
// an approved command runs, a denied one is not run and the model reads
// the reason, one nobody decides is not run after the timeout, and a
// command no pattern matches runs without asking.
func TestE2EGatedShellCommandsOfTheSDKBackend(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	m := startModel(t, false)
	c.startModelDaemon(m)
	shell := func(cmd string) modelTurn {
		return modelTurn{"Tools": []map[string]any{{"Name": "run_shell", "Args": map[string]any{"command": cmd}}}}
	}
	m.add(t, shell("echo deploy now"))
	m.add(t, shell("echo deploy again"))
	m.add(t, shell("echo deploy late"))
	m.add(t, shell("echo free to go"))
	m.add(t, modelTurn{"Text": "deployed what I could"})
	c.ok("new", "dev", "--backend", "sdk", "--model", "anthropic/claude-sonnet-4-5",
		"--config", `{"approvals": {"shell": ["echo deploy*"], "timeout": "3s"}}`)
	c.ok("send", "dev", "deploy")

	q := c.pendingApproval("dev")
	if q.Question != "run_shell: echo deploy now" {
		t.Errorf("approval = %q, want the exact command", q.Question)
	}
	c.ok("approve", q.ID)
	q = c.pendingApproval("dev")
	c.ok("deny", q.ID, "--reason", "not today")
	q = c.pendingApproval("dev")
	c.waitFor("the last approval to expire", func() bool {
		for _, x := range c.questionsJSON("dev", "--all") {
			if x.ID == q.ID && x.State == "expired" {
				return true
			}
		}
		return false
	})
	c.waitFor("dev's reply", func() bool { return strings.Contains(c.ok("peek"), "[dev] deployed what I could") })
	reqs := m.requests(t)
	if len(reqs) != 5 {
		t.Fatalf("the model got %d requests, want 5", len(reqs))
	}
	result := func(i int) string { return string(reqs[i].RawBody) } // request i carries the result of turn i-1
	for i, want := range map[int]string{1: "deploy now", 2: "not run: run_shell: echo deploy again: denied by user: not today",
		3: "not approved within 3s", 4: "free to go"} {
		if !strings.Contains(result(i), want) {
			t.Errorf("tool result %d lacks %q:\n%s", i, want, result(i))
		}
	}
	for _, not := range []string{"deploy again\\n", "deploy late\\n"} {
		for i := range reqs {
			if strings.Contains(result(i), not) {
				t.Errorf("a refused command ran: request %d holds %q", i, not)
			}
		}
	}
}

// A planner's worktree_integrate under approvals: {integrate: true} waits
// for a person: main moves only after approve (issue 28, item 2).
func TestE2EGatedIntegrateWaitsForApproval(t *testing.T) {
	t.Parallel()
	repo := newRepoE2E(t)
	c := newCLI(t)
	file := filepath.Join(repo, "team.yaml")
	writeFile(t, file, `name: team
workspace: {git: worktree}
agents:
  alice:
    backend: mock
    config: {script: [{shell: "echo from alice > a.txt && git add a.txt && git -c user.name=alice -c user.email=a@example.com commit -qm 'alice adds a.txt'"}, {result: committed}]}
  lead:
    backend: mock
    can_spawn: true
    approvals: {integrate: true}
    config: {script: [{tool: worktree_integrate, args: {agent: alice}}, {result: integrated}]}
`)
	writeFile(t, filepath.Join(repo, ".gitignore"), ".workflow/\nteam.yaml\n")
	gitE2E(t, repo, "add", ".gitignore")
	gitE2E(t, repo, "commit", "-q", "-m", "first")
	before := gitE2E(t, repo, "rev-parse", "main")
	c.ok("start", file, "--background")
	c.ok("send", "alice@team", "commit something")
	c.waitFor("alice's commit", func() bool { return strings.Contains(c.ok("peek", "@team"), "[alice] committed") })
	c.ok("send", "lead@team", "integrate alice")
	q := c.pendingApproval("lead@team")
	if !strings.HasPrefix(q.Question, `worktree_integrate {"agent":"alice"}`) {
		t.Errorf("approval = %q, want the integration of alice", q.Question)
	}
	if now := gitE2E(t, repo, "rev-parse", "main"); now != before {
		t.Fatalf("main moved before the integration was approved: %s → %s", before, now)
	}
	c.ok("approve", q.ID)
	c.waitFor("the approved integration", func() bool { return strings.Contains(c.ok("peek", "@team"), "[lead] integrated") })
	if now := gitE2E(t, repo, "rev-parse", "main"); now == before {
		t.Error("main did not move after the integration was approved")
	}
	if out := gitE2E(t, repo, "show", "main:a.txt"); !strings.Contains(out, "from alice") {
		t.Errorf("main lacks alice's file: %q", out)
	}
}

// An approval pending when the daemon is killed (issue 40, item 4) ends
// with its run: the next daemon lists it no more, so nobody is asked
// twice; approving it fails saying why, and names the approval the
// run's retry asks instead once it has; that one works.
func TestE2EApprovalEndsWithItsDeadRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "team.yaml")
	writeFile(t, file, `name: team
approval_timeout: 10m
agents:
  sender:
    backend: mock
    approvals: {tools: [channel_send]}
    config:
      script:
        - {tool: channel_send, args: {message: "approved hello"}}
        - result: sent
`)
	daemon := c.startDaemon()
	c.ok("start", file, "--background")
	c.ok("send", "sender@team", "say hello")
	old := c.pendingApproval("sender@team")
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()

	c.startDaemon()
	for _, q := range c.questionsJSON("sender@team") {
		if q.ID == old.ID {
			t.Fatalf("the dead run's approval is still pending after the restart: %+v", q)
		}
	}
	if r := c.run("approve", old.ID); r.code != api.ExitConflict ||
		!strings.Contains(r.stderr, "approval "+old.ID+" can no longer be decided: the run that asked it ended (the daemon stopped during it)") {
		t.Errorf("approving the dead run's approval: exit %d, stderr %q", r.code, r.stderr)
	}
	retry := c.pendingApproval("sender@team")
	if retry.ID == old.ID || retry.RunID == old.RunID || retry.Question != old.Question {
		t.Fatalf("the retry's approval %+v, the dead run's %+v", retry, old)
	}
	if r := c.run("approve", old.ID); r.code != api.ExitConflict || !strings.Contains(r.stderr, "its retry asks again: approve "+retry.ID) {
		t.Errorf("approving the dead run's approval once the retry asked: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, q := range c.questionsJSON("sender@team", "--all") {
		if q.ID == old.ID && (q.State != "cancelled" || !strings.HasPrefix(q.Answer, "the run ended")) {
			t.Errorf("the dead run's approval: %+v, want cancelled as its run ended", q)
		}
	}
	if out := c.ok("approve", retry.ID); !strings.Contains(out, "approved "+retry.ID) {
		t.Errorf("approve printed %q", out)
	}
	c.waitFor("the approved message and the retry's end", func() bool {
		runs := c.agent("sender@team").Runs
		return strings.Contains(c.ok("peek", "@team"), "[sender] approved hello") && len(runs) == 2 && runs[0].State == api.RunSucceeded
	})
	if n := strings.Count(c.ok("peek", "@team", "-n", "100"), "[sender] approved hello"); n != 1 {
		t.Errorf("the approved message was sent %d times", n)
	}
}
