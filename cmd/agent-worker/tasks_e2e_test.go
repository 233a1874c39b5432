package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

func (c *cli) tasksJSON(args ...string) []api.Task {
	c.t.Helper()
	var l api.TaskList
	if err := json.Unmarshal([]byte(c.ok(append([]string{"tasks", "--json"}, args...)...)), &l); err != nil {
		c.t.Fatalf("tasks --json: %v", err)
	}
	return l.Tasks
}

func (c *cli) taskJSON(id string) api.TaskDetail {
	c.t.Helper()
	var d api.TaskDetail
	if err := json.Unmarshal([]byte(c.ok("tasks", "show", id, "--json")), &d); err != nil {
		c.t.Fatalf("tasks show --json: %v", err)
	}
	return d
}

// tasks add, the board as a tree, one task with its history, --json, and
// the mistakes a user makes, each with its exit code and what to do.
func TestE2ETasksAddListShowAndBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "dev", "--backend", "external")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"Set up CI"}, "task-1 added to @global: Set up CI (ready)\n"},
		{[]string{"Write the parser", "--priority", "2", "--after", "task-1", "--assign", "dev", "--description", "Hand-written lexer.\nNo generators."},
			"task-2 added to @global: Write the parser (priority 2; for dev; after task-1; waiting for task-1)\n"},
		{[]string{"Parser tests", "--parent", "task-2"}, "task-3 added to @global: Parser tests (ready)\n"},
		{[]string{"Docs", "--after", "1", "--after", "task-2"}, "task-4 added to @global: Docs (after task-1, task-2; waiting for task-1, task-2)\n"},
	} {
		if got := c.ok(append([]string{"tasks", "add", "@global"}, tc.args...)...); got != tc.want {
			t.Errorf("tasks add %q printed %q, want %q", tc.args, got, tc.want)
		}
	}

	out := c.ok("tasks")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	want := []string{
		"@global: 4 task(s), 4 pending (2 ready)",
		"ID        STATE    TITLE             DETAILS",
		"task-1    pending  Set up CI         ready",
		"task-2    pending  Write the parser  priority 2; for dev; after task-1; waiting for task-1, task-3",
		"  task-3  pending  Parser tests      ready",
		"task-4    pending  Docs              after task-1, task-2; waiting for task-1, task-2",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("tasks printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}

	ts := c.tasksJSON("@global")
	if len(ts) != 4 || ts[1].ID != "task-2" || strings.Join(ts[1].DependsOn, ",") != "task-1" || strings.Join(ts[1].Subtasks, ",") != "task-3" ||
		ts[1].Assignee != "dev" || ts[1].CreatedBy != "user" || ts[1].Ready || !ts[2].Ready || ts[2].Parent != "task-2" {
		t.Errorf("tasks --json: %+v", ts)
	}
	if got := c.tasksJSON("--state", "completed"); len(got) != 0 {
		t.Errorf("completed tasks: %+v", got)
	}
	if got := c.ok("tasks", "--state", "completed"); got != "no completed tasks in @global (add one with `agent-worker tasks add @global <title>`)\n" {
		t.Errorf("an empty filter printed %q", got)
	}

	show := c.ok("tasks", "show", "task-2", "@global")
	for _, s := range []string{`task-2  pending  "Write the parser"  (@global)`, "created by user", "priority 2", "assigned to: dev",
		"subtasks:    task-3", "after:       task-1", "waiting for: task-1, task-3", "  description:\n    Hand-written lexer.\n    No generators.\n",
		"history:\n", "  user  created  pending\n"} {
		if !strings.Contains(show, s) {
			t.Errorf("tasks show lacks %q:\n%s", s, show)
		}
	}
	if d := c.taskJSON("task-2"); d.Scope != "@global" || d.Task.Title != "Write the parser" || len(d.History) != 1 || d.History[0].Kind != "created" {
		t.Errorf("tasks show --json: %+v", d)
	}

	for name, tc := range map[string]struct {
		args   []string
		code   int
		stderr string
	}{
		"unknown dependency": {[]string{"tasks", "add", "@global", "x", "--after", "task-9"}, api.ExitUsage, "depends_on: task-9 is not a task of @global:main"},
		"cycle":              {[]string{"tasks", "add", "@global", "x", "--parent", "task-2", "--after", "task-4"}, api.ExitUsage, "dependency cycle: new task → task-4 → task-2 → new task"},
		"agent target":       {[]string{"tasks", "add", "dev", "x"}, api.ExitUsage, "dev is an agent: tasks belong to a workflow, give @global"},
		"no title":           {[]string{"tasks", "add", "@global"}, api.ExitUsage, "usage: agent-worker tasks add <@wf[:tag]> <title>"},
		"empty title":        {[]string{"tasks", "add", "@global", " "}, api.ExitUsage, "title is empty: say in a line what is to be done"},
		"unknown assignee":   {[]string{"tasks", "add", "@global", "x", "--assign", "zed"}, api.ExitUsage, "assignee: zed is not a member of @global:main"},
		"bad priority":       {[]string{"tasks", "add", "@global", "x", "--priority", "high"}, api.ExitUsage, "invalid value"},
		"unknown board":      {[]string{"tasks", "@nowhere"}, api.ExitNotFound, `workflow "nowhere:main" not found`},
		"bad state":          {[]string{"tasks", "--state", "done"}, api.ExitUsage, `unknown task state "done": use pending, claimed, in_progress, completed, failed or cancelled`},
		"unknown task":       {[]string{"tasks", "show", "task-99"}, api.ExitNotFound, "task task-99 not found"},
		"other board":        {[]string{"tasks", "show", "task-1", "@elsewhere"}, api.ExitNotFound, "task task-1 not found in @elsewhere:main"},
		"other board (flag)": {[]string{"tasks", "show", "task-1", "--target", "@elsewhere"}, api.ExitNotFound, "task task-1 not found in @elsewhere:main"},
	} {
		r := c.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: agent-worker %s: exit %d, stderr %q; want %d saying %q", name, strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.stderr)
		}
	}
	if n := len(c.tasksJSON()); n != 4 {
		t.Errorf("%d tasks after the refusals, want 4", n)
	}
}

// A daemon killed with SIGKILL while a run holds a task: the next daemon
// keeps the board, marks the run failed, and the task goes back to pending
// saying why (the run then retakes it, since its wake is still unread).
func TestE2ETaskOfARunKilledWithTheDaemonGoesBackToPendingAtRestart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("new", "sleeper", "--backend", "mock", "--config", mockConfig(t,
		map[string]any{"tool": "task_claim", "args": map[string]any{"id": "task-1"}},
		map[string]any{"tool": "task_progress", "args": map[string]any{"id": "task-1", "note": "started", "percent": 10}},
		map[string]any{"hang": true}))
	c.ok("tasks", "add", "@global", "Long job", "--assign", "sleeper")
	c.ok("tasks", "add", "@global", "After it", "--after", "task-1")
	c.waitFor("sleeper's run to start task-1", func() bool { return c.tasksJSON()[0].State == "in_progress" })
	run := c.taskJSON("task-1").Task.HolderRun
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()

	c.startDaemon()
	returned := func() *contract.TaskEvent {
		for _, ev := range c.taskJSON("task-1").History {
			if ev.Kind == "returned" {
				return &ev
			}
		}
		return nil
	}
	c.waitFor("task-1 back on the board", func() bool { return returned() != nil })
	if ev := returned(); ev.Actor != "system" || !strings.Contains(ev.Note, "sleeper's run "+run+" ended (failed: the daemon stopped during this run)") {
		t.Errorf("task-1 returned: %+v", ev)
	}
	ts := c.tasksJSON()
	if len(ts) != 2 || ts[1].Title != "After it" || strings.Join(ts[1].WaitingOn, ",") != "task-1" || ts[0].HolderRun == run {
		t.Errorf("the board after the restart: %+v", ts)
	}
	if out := c.ok("peek", "@global", "-n", "50"); !strings.Contains(out, `task-1 "Long job" went back to pending: sleeper's run `+run) {
		t.Errorf("the channel lacks the return line:\n%s", out)
	}
}
