package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

func tasksCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("tasks", flag.ContinueOnError)
	e.common(fs)
	state := fs.String("state", "", "only tasks in this state: pending, claimed, in_progress, completed, failed or cancelled")
	assignee := fs.String("assignee", "", "only tasks assigned to this agent")
	cmd := leaf("tasks", "tasks [@wf[:tag]] [--state S] [--assignee AGENT] [--json] | tasks add … | tasks show … | tasks cancel …",
		"show a team's task board as a tree (subtasks under their parent, dependencies as \"after task-1\"); `tasks add`, `tasks show` and `tasks cancel` below",
		fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			target := "@" + api.GlobalWorkflow
			if len(args) == 1 {
				target = args[0]
			}
			t, err := boardTarget(target)
			if err != nil {
				return err
			}
			// The daemon checks the state and the title, as for every client.
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			ts, err := c.Tasks(ctx, t, api.TaskState(*state), *assignee)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.TaskList{Tasks: ts})
			}
			if len(ts) == 0 {
				what := "tasks"
				if *state != "" {
					what = *state + " tasks"
				}
				e.printf("no %s in %s (add one with `agent-worker tasks add %s <title>`)\n", what, t.Display(), t.Display())
				return nil
			}
			e.printf("%s\n", boardSummary(t, ts))
			return e.printTaskTree(ts)
		})
	cmd.Subcommands = []*ffcli.Command{tasksAddCmd(e), tasksShowCmd(e), tasksCancelCmd(e)}
	return cmd
}

func tasksAddCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("tasks add", flag.ContinueOnError)
	e.common(fs)
	desc := fs.String("description", "", "details the taker needs: context, acceptance criteria, where to look")
	priority := fs.Int("priority", 0, "higher is taken first (negative is allowed)")
	var after stringList
	fs.Var(&after, "after", "a task that must be completed before this one can be claimed (repeatable)")
	assign := fs.String("assign", "", "the only agent who may claim it")
	parent := fs.String("parent", "", "the task this is a subtask of (the parent waits for its subtasks)")
	role := fs.String("role", "", "only an agent with this role may claim it (an agent's roles: in the workflow file, or new --role)")
	return leaf("add", "tasks add <@wf[:tag]> <title> [--description TEXT] [--priority N] [--after ID]... [--assign AGENT] [--role R] [--parent ID]",
		"add a task to a team's board; a task that can be claimed at once wakes its assignee, or the agents free for work", fs, [2]int{2, 2},
		func(ctx context.Context, args []string) error {
			t, err := boardTarget(args[0])
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			task, err := c.CreateTask(ctx, api.TaskCreate{Target: t.Display(), Title: args[1], Description: *desc, Priority: *priority,
				DependsOn: after, Parent: *parent, Assignee: *assign, Role: *role})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(task)
			}
			line := fmt.Sprintf("%s added to %s: %s", task.ID, t.Display(), task.Title)
			if d := taskDetails(task); d != "" {
				line += " (" + d + ")"
			}
			e.printf("%s\n", line)
			return nil
		})
}

func tasksShowCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("tasks show", flag.ContinueOnError)
	e.common(fs)
	// --target was the board before it became the second argument, like
	// every other command's target; it still works.
	target := fs.String("target", "", "deprecated: the board (@wf[:tag]), now the second argument")
	return leaf("show", "tasks show <id> [@wf[:tag]] [--json]",
		"show one task with its description, result and history; a board (@wf[:tag]) checks the task is on it", fs, [2]int{1, 2},
		func(ctx context.Context, args []string) error {
			board := *target
			if len(args) == 2 {
				if board != "" && board != args[1] {
					return usagef("tasks show: the board is %s or %s? give it once, as the second argument", args[1], board)
				}
				board = args[1]
			}
			var scope *api.Target
			if board != "" {
				t, err := boardTarget(board)
				if err != nil {
					return err
				}
				scope = &t
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			d, err := c.GetTask(ctx, args[0], scope)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(d)
			}
			e.printTaskDetail(d)
			return nil
		})
}

func tasksCancelCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("tasks cancel", flag.ContinueOnError)
	e.common(fs)
	reason := fs.String("reason", "", "why the task is no longer wanted (required): the channel and the agents concerned read it")
	return leaf("cancel", "tasks cancel <id> [@wf[:tag]] --reason TEXT [--json]",
		"cancel a task and its open subtasks; whoever held them and whoever waits on them is told. A completed or failed task cannot be cancelled", fs, [2]int{1, 2},
		func(ctx context.Context, args []string) error {
			if strings.TrimSpace(*reason) == "" {
				return usagef("tasks cancel: --reason is required: say why the task is no longer wanted")
			}
			req := api.TaskCancel{Reason: *reason}
			if len(args) == 2 {
				t, err := boardTarget(args[1])
				if err != nil {
					return err
				}
				req.Target = t.Display()
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			task, err := c.CancelTask(ctx, args[0], req)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(task)
			}
			e.printf("%s cancelled: %s\n", task.ID, task.Title)
			return nil
		})
}

// boardTarget reads the target of a board: a workflow, not an agent.
func boardTarget(s string) (api.Target, error) { return usageTarget(api.ParseScopeTarget(s, "tasks")) }

// boardSummary is the line above a board: how many tasks in each state.
func boardSummary(t api.Target, ts []api.Task) string {
	n := map[string]int{}
	ready := 0
	for _, tk := range ts {
		n[tk.State]++
		if tk.Ready {
			ready++
		}
	}
	var parts []string
	for _, s := range api.TaskStates {
		if c := n[string(s)]; c > 0 {
			part := fmt.Sprintf("%d %s", c, s)
			if s == api.TaskPending && ready > 0 {
				part += fmt.Sprintf(" (%d ready)", ready)
			}
			parts = append(parts, part)
		}
	}
	return fmt.Sprintf("%s: %d task(s), %s", t.Display(), len(ts), strings.Join(parts, ", "))
}

// printTaskTree prints a board as a tree: every task in id order, its
// subtasks indented under it. A subtask whose parent is not listed (a
// filter left it out) is a root.
func (e *env) printTaskTree(ts []api.Task) error {
	listed := map[string]bool{}
	children := map[string][]api.Task{}
	for _, t := range ts {
		listed[t.ID] = true
	}
	var roots []api.Task
	for _, t := range ts {
		if t.Parent != "" && listed[t.Parent] {
			children[t.Parent] = append(children[t.Parent], t)
		} else {
			roots = append(roots, t)
		}
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTITLE\tDETAILS")
	var walk func(t api.Task, depth int)
	walk = func(t api.Task, depth int) {
		d := taskDetails(t)
		if t.Parent != "" && !listed[t.Parent] {
			d = strings.TrimPrefix(d+"; subtask of "+t.Parent, "; ")
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", strings.Repeat("  ", depth), t.ID, t.State, api.OneLine(t.Title, 60), d)
		for _, c := range children[t.ID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return tw.Flush()
}

// taskDetails is the DETAILS column of a task: priority, assignee, holder
// and progress, dependencies, and whether a pending task is ready.
func taskDetails(t api.Task) string {
	var parts []string
	if t.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", t.Priority))
	}
	if t.Assignee != "" {
		parts = append(parts, "for "+t.Assignee)
	}
	if t.Role != "" {
		parts = append(parts, "role "+t.Role)
	}
	switch t.State {
	case string(api.TaskClaimed), string(api.TaskInProgress):
		held := "held by " + t.Holder
		if t.Percent != nil {
			held += fmt.Sprintf(", %d%%", *t.Percent)
		}
		parts = append(parts, held)
	case string(api.TaskCompleted):
		parts = append(parts, "by "+t.Holder)
	case string(api.TaskFailed):
		parts = append(parts, fmt.Sprintf("%s: %s", t.Holder, api.OneLine(t.Error, 60)))
	case string(api.TaskCancelled):
		parts = append(parts, "cancelled: "+api.OneLine(t.Error, 60))
	}
	if len(t.Artifacts) > 0 {
		parts = append(parts, fmt.Sprintf("%d artifact(s)", len(t.Artifacts)))
	}
	if len(t.DependsOn) > 0 {
		parts = append(parts, "after "+strings.Join(t.DependsOn, ", "))
	}
	if t.Retries > 0 {
		parts = append(parts, fmt.Sprintf("retry %d of %d", t.Retries, t.MaxRetries))
	}
	switch {
	case t.Ready:
		parts = append(parts, "ready")
	case t.State == string(api.TaskPending):
		parts = append(parts, "waiting for "+strings.Join(t.WaitingOn, ", "))
	}
	return strings.Join(parts, "; ")
}

// printTaskDetail is `tasks show`: the task's fields, then its history.
func (e *env) printTaskDetail(d api.TaskDetail) {
	t := d.Task
	e.printf("%s  %s  %q  (%s)\n", t.ID, t.State, t.Title, d.Scope)
	e.printf("  created by %s %s", t.CreatedBy, t.CreatedAt.Local().Format(time.DateTime))
	if t.Priority != 0 {
		e.printf(", priority %d", t.Priority)
	}
	e.printf("\n")
	if t.Assignee != "" {
		e.printf("  assigned to: %s\n", t.Assignee)
	}
	if t.Role != "" {
		e.printf("  role:        %s\n", t.Role)
	}
	if t.Parent != "" {
		e.printf("  subtask of:  %s\n", t.Parent)
	}
	if len(t.Subtasks) > 0 {
		e.printf("  subtasks:    %s\n", strings.Join(t.Subtasks, ", "))
	}
	if len(t.DependsOn) > 0 {
		e.printf("  after:       %s\n", strings.Join(t.DependsOn, ", "))
	}
	switch {
	case t.Ready:
		e.printf("  ready to claim\n")
	case len(t.WaitingOn) > 0 && t.State == string(api.TaskPending):
		e.printf("  waiting for: %s\n", strings.Join(t.WaitingOn, ", "))
	}
	if t.LeaseExpiresAt != nil {
		who := t.Holder
		if t.HolderRun != "" {
			who += " (run " + t.HolderRun + ")"
		}
		e.printf("  held by:     %s, lease until %s\n", who, t.LeaseExpiresAt.Local().Format(time.TimeOnly))
	}
	if t.Percent != nil {
		e.printf("  progress:    %d%%\n", *t.Percent)
	}
	if t.Retries > 0 {
		e.printf("  retries:     %d of %d\n", t.Retries, t.MaxRetries)
	}
	errName := "error"
	if t.State == string(api.TaskCancelled) {
		errName = "cancelled"
	}
	for _, f := range []struct{ name, text string }{{"description", t.Description}, {"result", t.Result}, {errName, t.Error}} {
		if f.text == "" {
			continue
		}
		e.printf("  %s:\n", f.name)
		for _, l := range strings.Split(strings.TrimRight(f.text, "\n"), "\n") {
			e.printf("    %s\n", l)
		}
	}
	if len(t.Artifacts) > 0 {
		e.printf("  artifacts:\n")
		for _, a := range t.Artifacts {
			e.printf("    %s\n", a)
		}
	}
	e.printf("history:\n")
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, ev := range d.History {
		note := api.OneLine(ev.Note, 200)
		if ev.Percent != nil {
			note = strings.TrimSpace(fmt.Sprintf("%d%% %s", *ev.Percent, note))
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s", ev.At.Local().Format(time.DateTime), ev.Actor, ev.Kind, ev.State)
		if note != "" {
			line += "\t" + note
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}
