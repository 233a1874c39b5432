package mcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// addTaskTools registers the task board's tools. Each acts as me, in the
// run the calling token belongs to, which holds the leases me takes.
func (s *Server) addTaskTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	actor := func(ctx context.Context) store.TaskActor { return store.TaskActor{AgentKey: me, Run: runOf(ctx)} }
	one := func(t store.Task, err error) (tools.Task, string, error) {
		if err != nil {
			return tools.Task{}, "", err
		}
		return team.APITask(t), renderTask(t), nil
	}

	tool(s, srv, me, tools.TaskCreate,
		"Add a task to your team's board. depends_on lists tasks that must be completed before it can be claimed; parent makes it a subtask (the parent can be claimed and completed only once all its subtasks are completed or cancelled); assignee reserves it for one teammate, role for the teammates with that role (team_members shows them). A task that can be claimed at once wakes its assignee, or else the teammates free for work. Returns the task and its id (task-N).",
		func(ctx context.Context, in tools.TaskCreateArgs) (tools.Task, string, error) {
			return one(s.svc.CreateTask(ctx, store.NewTask{Workflow: scope.Workflow, Tag: scope.Tag, Title: in.Title,
				Description: in.Description, Priority: in.Priority, DependsOn: in.DependsOn, Parent: in.Parent,
				Assignee: in.Assignee, Role: in.Role, CreatedBy: me.Name}))
		})

	tool(s, srv, me, tools.TaskList,
		"Show your team's task board, oldest first: each task's state (pending, claimed, in_progress, completed, failed, cancelled), whether a pending one is ready to claim or what it waits for, who holds it and how far along it is. Filter by state or assignee.",
		func(ctx context.Context, in tools.TaskListArgs) (tools.TasksResult, string, error) {
			ts, err := s.svc.Tasks(ctx, scope, store.TaskFilter{State: api.TaskState(in.State), Assignee: in.Assignee})
			if err != nil {
				return tools.TasksResult{}, "", err
			}
			out := tools.TasksResult{Tasks: make([]tools.Task, 0, len(ts)), Count: len(ts)}
			lines := make([]string, 0, len(ts))
			for _, t := range ts {
				out.Tasks = append(out.Tasks, team.APITask(t))
				lines = append(lines, renderTask(t))
			}
			if len(lines) == 0 {
				return out, "no tasks", nil
			}
			return out, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.TaskClaim,
		fmt.Sprintf("Take a task to work on: it becomes yours (claimed) and nobody else can take it. Without an id you get the best ready task for you: assigned to you first, then one for a role of yours, then the highest priority, then the oldest (ready: pending, every depends_on completed and every subtask completed or cancelled, not assigned to someone else, and its role, if any, one of yours). my_tasks lists them in that order. The claim lasts while your run is alive; if the run ends before you complete or release the task, or nothing is heard from you for %s, it goes back to pending for others. Report with task_progress, finish with task_complete or task_fail, or hand it back with task_release.", store.TaskLease),
		func(ctx context.Context, in tools.TaskClaimArgs) (tools.Task, string, error) {
			return one(s.svc.ClaimTask(ctx, actor(ctx), in.ID))
		})

	tool(s, srv, me, tools.TaskProgress,
		"Record progress on a task you hold: a note and, if you can tell, a percentage. The first note moves the task from claimed to in_progress. Teammates and the user read the notes in the task's history.",
		func(ctx context.Context, in tools.TaskProgressArgs) (tools.Task, string, error) {
			return one(s.svc.TaskProgress(ctx, actor(ctx), in.ID, in.Note, in.Percent))
		})

	tool(s, srv, me, tools.TaskComplete,
		"Mark a task you hold completed, with a result that says what was done and where to find it, and artifacts: the files it produced, relative to your working directory (each must exist). Its subtasks must be completed or cancelled first. The channel is told, and the tasks that were waiting only for this one wake whoever may claim them.",
		func(ctx context.Context, in tools.TaskCompleteArgs) (tools.Task, string, error) {
			artifacts, err := s.checkArtifacts(ctx, me, in.Artifacts)
			if err != nil {
				return tools.Task{}, "", err
			}
			return one(s.svc.CompleteTask(ctx, actor(ctx), in.ID, in.Result, artifacts))
		})

	tool(s, srv, me, tools.TaskCancel,
		"Cancel a task that is no longer wanted, saying why: it and its open subtasks become cancelled, whoever held them stops, and whoever is behind a task that waited for it is told. A completed or failed task cannot be cancelled.",
		func(ctx context.Context, in tools.TaskCancelArgs) (tools.Task, string, error) {
			return one(s.svc.CancelTask(ctx, scope, me.Name, in.ID, in.Reason))
		})

	tool(s, srv, me, tools.MyTasks,
		fmt.Sprintf("Your tasks in one call: the ones you hold, and the ready ones you may claim, best first (the order task_claim without an id takes them in), with your roles. Calling it is a sign of life: the leases of the tasks you hold are renewed (they last %s).", store.TaskLease),
		func(ctx context.Context, _ tools.NoArgs) (tools.MyTasksResult, string, error) {
			held, claim, roles, err := s.svc.MyTasks(ctx, actor(ctx))
			if err != nil {
				return tools.MyTasksResult{}, "", err
			}
			out := tools.MyTasksResult{Held: make([]tools.Task, 0, len(held)), Claimable: make([]tools.Task, 0, len(claim)), Roles: roles}
			if out.Roles == nil {
				out.Roles = []string{}
			}
			var b strings.Builder
			fmt.Fprintf(&b, "roles: %s\nheld:", orNone(roles))
			for _, t := range held {
				out.Held = append(out.Held, team.APITask(t))
				b.WriteString("\n  " + renderTask(t))
			}
			if len(held) == 0 {
				b.WriteString(" none")
			}
			b.WriteString("\nclaimable:")
			for _, t := range claim {
				out.Claimable = append(out.Claimable, team.APITask(t))
				b.WriteString("\n  " + renderTask(t))
			}
			if len(claim) == 0 {
				b.WriteString(" none")
			}
			return out, b.String(), nil
		})

	tool(s, srv, me, tools.TaskFail,
		fmt.Sprintf("Give up on a task you hold, saying why. With retry: true it goes back to pending for another try while it has retries left (%d by default); otherwise it fails for good, and the tasks that depend on it cannot start.", store.DefaultTaskRetries),
		func(ctx context.Context, in tools.TaskFailArgs) (tools.Task, string, error) {
			return one(s.svc.FailTask(ctx, actor(ctx), in.ID, in.Reason, in.Retry))
		})

	tool(s, srv, me, tools.TaskRelease,
		"Hand back a task you hold without finishing it: it goes back to pending for whoever may claim it, its retries unchanged. Use it when you cannot go on and someone else should.",
		func(ctx context.Context, in tools.TaskRefArgs) (tools.Task, string, error) {
			return one(s.svc.ReleaseTask(ctx, actor(ctx), in.ID))
		})
}

// renewEvery throttles the lease renewal of an outside agent's tool calls
// to one write a minute; its leases last store.TaskLease.
const renewEvery = time.Minute

// renewOutsideLeases renews the task leases of an agent calling without a
// run (an outside MCP client), at most once per renewEvery. A run's leases
// ride on its heartbeat, which costs no write of its own.
func (s *Server) renewOutsideLeases(ctx context.Context, me store.AgentKey) {
	now := time.Now()
	s.mu.Lock()
	due := now.Sub(s.renewed[me]) >= renewEvery
	if due {
		s.renewed[me] = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.svc.RenewLeases(ctx, me); err != nil && ctx.Err() == nil {
		s.log.Warn("renew task leases", "agent", me.String(), "error", err)
	}
}

// renderTask is a task in one line, as the tools show it to a model:
// `task-3 [in_progress, bob, 40%] "Write the parser" (priority 2, after task-1; waits for task-1)`.
func renderTask(t store.Task) string {
	state := string(t.State)
	switch {
	case t.Ready():
		state = "pending, ready"
	case t.State.Held() || t.State.Done():
		state += ", " + t.Holder
	}
	if t.Percent != nil && !t.State.Done() {
		state += fmt.Sprintf(", %d%%", *t.Percent)
	}
	var extra []string
	if t.Priority != 0 {
		extra = append(extra, fmt.Sprintf("priority %d", t.Priority))
	}
	if t.Assignee != "" {
		extra = append(extra, "for "+t.Assignee)
	}
	if t.Role != "" {
		extra = append(extra, "role "+t.Role)
	}
	if t.Parent != "" {
		extra = append(extra, "subtask of "+t.Parent)
	}
	if len(t.DependsOn) > 0 {
		extra = append(extra, "after "+strings.Join(t.DependsOn, ", "))
	}
	if t.State == api.TaskPending && len(t.WaitingOn) > 0 {
		extra = append(extra, "waits for "+strings.Join(t.WaitingOn, ", "))
	}
	if t.Error != "" && t.State == api.TaskCancelled {
		extra = append(extra, "cancelled: "+store.OneLine(t.Error, 300))
	} else if t.Error != "" {
		extra = append(extra, "error: "+store.OneLine(t.Error, 300))
	}
	if len(t.Artifacts) > 0 {
		extra = append(extra, "artifacts: "+strings.Join(t.Artifacts, ", "))
	}
	line := fmt.Sprintf("%s [%s] %q", t.ID, state, t.Title)
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, "; ") + ")"
	}
	return line
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// checkArtifacts checks task_complete's artifacts: paths inside the
// agent's working directory (store.CleanArtifacts) that exist there, not
// through a symbolic link that leads out of it.
func (s *Server) checkArtifacts(ctx context.Context, me store.AgentKey, paths []string) ([]string, error) {
	clean, err := store.CleanArtifacts(paths)
	if err != nil || len(clean) == 0 || s.ProjectDir == nil {
		return clean, err
	}
	dir, err := s.ProjectDir(ctx, me)
	if err != nil {
		return nil, fmt.Errorf("your working directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("your working directory: %w", err)
	}
	defer root.Close()
	var missing []string
	for _, p := range clean {
		if _, err := root.Stat(filepath.FromSlash(p)); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, api.Errorf(api.CodeInvalid, "artifacts: %s %s not in your working directory %s (or leave it through a link): name files you wrote there, relative to it",
			strings.Join(missing, ", "), isAre(len(missing)), dir)
	}
	return clean, nil
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
