package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// roleAgent is a mock agent with roles whose run writes <name>.md, claims
// the best ready task for it (task_claim without an id) and completes it
// with that file as its artifact.
func roleAgent(name, role string) string {
	return "  " + name + ":\n    backend: mock\n    roles: [" + role + "]\n    config:\n      script:\n" +
		"        - {shell: \"echo by " + name + " > " + name + ".md\"}\n" +
		"        - {tool: task_claim, args: {}}\n" +
		"        - {tool: task_complete, args: {id: \"{{last.id}}\", result: \"done by " + name + "\", artifacts: [" + name + ".md]}}\n" +
		"        - {result: done}\n"
}

// Roles route three tasks to the right agents: each task wakes only the
// agent with its role, whose task_claim without an id takes it; the
// completion keeps its artifact, which tasks show lists; a task for a
// role nobody has is a problem in status; a completed task cannot be
// cancelled (issue 45, items 4 and 5).
func TestE2ERolesRouteTasksToTheRightAgents(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "crew.yaml")
	writeFile(t, file, "name: crew\nagents:\n"+roleAgent("rita", "reviewer")+roleAgent("dan", "coder")+roleAgent("olga", "ops"))
	c.ok("start", file, "--background")
	c.ok("tasks", "add", "@crew", "Sketch the logo", "--role", "designer")
	c.ok("tasks", "add", "@crew", "Deploy", "--role", "ops")
	c.ok("tasks", "add", "@crew", "Write the parser", "--role", "coder")
	c.ok("tasks", "add", "@crew", "Review the parser", "--role", "reviewer")

	want := map[string]string{"Deploy": "olga", "Write the parser": "dan", "Review the parser": "rita"}
	c.waitFor("the three role tasks completed", func() bool {
		done := 0
		for _, tk := range c.tasksJSON("@crew") {
			if tk.State == string(api.TaskCompleted) {
				done++
			}
		}
		return done == 3
	})
	for _, tk := range c.tasksJSON("@crew") {
		who, routed := want[tk.Title]
		switch {
		case !routed && tk.State != string(api.TaskPending):
			t.Errorf("%s %q (role %s, which nobody has) is %s, want pending", tk.ID, tk.Title, tk.Role, tk.State)
		case routed && (tk.Holder != who || tk.Result != "done by "+who || strings.Join(tk.Artifacts, ",") != who+".md"):
			t.Errorf("%s %q (role %s) was done by %s (%q, artifacts %q), want %s", tk.ID, tk.Title, tk.Role, tk.Holder, tk.Result, tk.Artifacts, who)
		}
	}
	if show := c.ok("tasks", "show", "task-2"); !strings.Contains(show, "  role:        ops\n") || !strings.Contains(show, "  artifacts:\n    olga.md\n") {
		t.Errorf("tasks show task-2 lacks the role or the artifact:\n%s", show)
	}
	if _, err := os.Stat(filepath.Join(dir, "olga.md")); err != nil {
		t.Errorf("olga's artifact: %v", err)
	}
	if st := c.ok("status"); !strings.Contains(st, "workflow @crew: task-1 is for the role designer, which none of its agents has") {
		t.Errorf("status does not warn of the role nobody has:\n%s", st)
	}
	r := c.run("tasks", "cancel", "task-2", "--reason", "too late")
	if r.code != api.ExitConflict || !strings.Contains(r.stderr, "task-2 is already completed (by olga), so it cannot be cancelled") {
		t.Errorf("cancelling a completed task: exit %d, stderr %q", r.code, r.stderr)
	}
	if tk := c.taskJSON("task-2").Task; tk.State != string(api.TaskCompleted) {
		t.Errorf("task-2 after the refused cancel: %s", tk.State)
	}
}

// A cancelled parent cancels its subtasks at every depth; the agent
// behind a task that waited for it is told in the channel, which wakes
// it; a bad cancel writes nothing (issue 45, item 5).
func TestE2ECancelledParentCancelsItsSubtasks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "crew.yaml")
	writeFile(t, file, `name: crew
agents:
  qa:
    backend: mock
    config:
      script:
        - {reply: "qa heard: {{inbox_summary}}", when: {text: "was cancelled"}}
        - {result: done}
`)
	c.ok("start", file, "--background")
	c.ok("tasks", "add", "@crew", "Release", "--assign", "qa")
	c.ok("tasks", "add", "@crew", "Build", "--parent", "task-1", "--assign", "qa")
	c.ok("tasks", "add", "@crew", "Compile", "--parent", "task-2", "--assign", "qa")
	c.ok("tasks", "add", "@crew", "Announce", "--after", "task-1", "--assign", "qa")

	for name, args := range map[string][]string{
		"no reason":    {"tasks", "cancel", "task-1"},
		"unknown task": {"tasks", "cancel", "task-99", "--reason", "x"},
	} {
		if r := c.run(args...); r.code == 0 {
			t.Errorf("%s: %v succeeded", name, args)
		}
	}
	if got := c.ok("tasks", "cancel", "task-1", "@crew", "--reason", "the plan changed"); got != "task-1 cancelled: Release\n" {
		t.Errorf("tasks cancel printed %q", got)
	}
	states := map[string]string{}
	for _, tk := range c.tasksJSON("@crew") {
		states[tk.ID] = tk.State
	}
	for id, want := range map[string]string{"task-1": "cancelled", "task-2": "cancelled", "task-3": "cancelled", "task-4": "pending"} {
		if states[id] != want {
			t.Errorf("%s is %s, want %s", id, states[id], want)
		}
	}
	line := `@qa task-1 "Release" was cancelled by user: the plan changed; its subtasks task-2, task-3 are cancelled with it; task-4 waits for it and cannot start`
	c.waitFor("qa to hear of the cancellation", func() bool {
		peek := c.ok("peek", "@crew", "-n", "50")
		return strings.Contains(peek, line) && strings.Contains(peek, "[qa] qa heard: system: qa task-1")
	})
	if show := c.ok("tasks", "show", "task-3"); !strings.Contains(show, "  cancelled:\n    the plan changed\n") || !strings.Contains(show, "cancelled with task-1: the plan changed") {
		t.Errorf("tasks show task-3:\n%s", show)
	}
	if r := c.run("tasks", "cancel", "task-2", "--reason", "again"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "task-2 is already cancelled") {
		t.Errorf("cancelling a cancelled task: exit %d, stderr %q", r.code, r.stderr)
	}
}

// With no checks: in a git workspace, a planner's worktree_integrate
// waits for a person by default: main moves only after approve (issue
// 45, item 6).
func TestE2EIntegrateWithoutChecksWaitsForApproval(t *testing.T) {
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
	if out := gitE2E(t, repo, "show", "main:a.txt"); !strings.Contains(out, "from alice") {
		t.Errorf("main lacks alice's file after approve: %q", out)
	}
}
