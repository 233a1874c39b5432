package team

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

// The task board: the store applies every rule in one transaction and
// writes the channel lines that go with it, worded by Lines from what the
// change did (store.TaskNews, tasklines.go); the service announces those
// lines after the commit, which is what wakes the agents they mention.

// CreateTask adds a task to a board; a task ready at once wakes who may
// claim it.
func (s *Service) CreateTask(ctx context.Context, nt store.NewTask) (store.Task, error) {
	t, msgs, err := s.db.CreateTask(ctx, nt, Lines{})
	s.publishAll(msgs)
	return t, err
}

// Tasks lists a board, oldest first.
func (s *Service) Tasks(ctx context.Context, scope store.Scope, f store.TaskFilter) ([]store.Task, error) {
	return s.db.ListTasks(ctx, scope, f)
}

// Task returns one task with its history; a zero scope finds it wherever
// it is.
func (s *Service) Task(ctx context.Context, scope store.Scope, id string) (store.Task, []store.TaskEvent, error) {
	return s.db.GetTask(ctx, scope, id)
}

// ClaimTask gives an agent a task (the one named, or the best ready one),
// held by the agent's run.
func (s *Service) ClaimTask(ctx context.Context, a store.TaskActor, id string) (store.Task, error) {
	t, err := s.db.ClaimTask(ctx, a, id)
	if err == nil {
		s.claims.Add(1) // after the commit: see RunLeases
	}
	return t, err
}

// TaskProgress records a progress note on a task the agent holds.
func (s *Service) TaskProgress(ctx context.Context, a store.TaskActor, id, note string, percent *int) (store.Task, error) {
	return s.db.TaskProgress(ctx, a, id, note, percent)
}

// CompleteTask finishes a task the agent holds, keeping its artifacts
// (paths the caller checked); the channel hears of it and the tasks
// waiting only for it wake who may claim them.
func (s *Service) CompleteTask(ctx context.Context, a store.TaskActor, id, result string, artifacts []string) (store.Task, error) {
	t, msgs, err := s.db.CompleteTask(ctx, a, id, result, artifacts, Lines{})
	s.publishAll(msgs)
	return t, err
}

// CancelTask cancels a task and its open subtasks (by is a member or
// "user"); the channel says so, waking whoever held them and whoever is
// behind a task that waited for them.
func (s *Service) CancelTask(ctx context.Context, scope store.Scope, by, id, reason string) (store.Task, error) {
	t, msgs, err := s.db.CancelTask(ctx, scope, by, id, reason, Lines{})
	s.publishAll(msgs)
	return t, err
}

// MyTasks is an agent's held and claimable tasks and its roles; asking is
// a sign of life that renews its leases.
func (s *Service) MyTasks(ctx context.Context, a store.TaskActor) (held, claimable []store.Task, roles []string, err error) {
	return s.db.MyTasks(ctx, a)
}

// FailTask gives up on a task the agent holds, back to pending while
// retries remain when retry is set.
func (s *Service) FailTask(ctx context.Context, a store.TaskActor, id, reason string, retry bool) (store.Task, error) {
	t, msgs, err := s.db.FailTask(ctx, a, id, reason, retry, Lines{})
	s.publishAll(msgs)
	return t, err
}

// ReleaseTask hands a held task back to the board.
func (s *Service) ReleaseTask(ctx context.Context, a store.TaskActor, id string) (store.Task, error) {
	t, msgs, err := s.db.ReleaseTask(ctx, a, id, Lines{})
	s.publishAll(msgs)
	return t, err
}

// RenewLeases renews the leases of an agent acting without a run (an
// outside MCP client): its tool calls are its only sign of life. A run's
// leases ride on the run's heartbeat instead.
func (s *Service) RenewLeases(ctx context.Context, k store.AgentKey) error {
	return s.db.RenewAgentLeases(ctx, k)
}

// maxLeaseWait bounds the sleep between two sweeps of lost leases, so an
// agent that left its team without a run (an outside client) is noticed
// within it.
const maxLeaseWait = time.Minute

// leaseQueue is the sweep's queue on the bus; it only needs run ends, and
// a drop costs nothing but a sweep.
const leaseQueue = 1024

// RunLeases returns tasks whose lease is lost to the board until ctx ends:
// at once (a restarted daemon finds the runs that died with the previous
// one failed, and their tasks go back), after every run's end, and when
// the next lease expires (at least every maxLeaseWait). Each sweep costs
// one read when nothing is lost, which also gives the next expiry, and
// nothing at all while no task is held: a board nobody has claimed from
// since the last sweep has no lease to lose.
func (s *Service) RunLeases(ctx context.Context) {
	sub := s.Bus.Subscribe(leaseQueue)
	defer func() { sub.Close() }()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var (
		idle bool   // the last sweep found no task held…
		seen uint64 // …and s.claims was this before it read
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case ev := <-sub.C:
			if ev.Kind != EventRunFinished && ev.Kind != EventRunFailed {
				continue
			}
		case <-sub.Dropped():
			sub.Close()
			sub = s.Bus.Subscribe(leaseQueue)
		}
		// A claim is counted after its commit, so one the sweep's read
		// missed always changes claims.
		if idle && s.claims.Load() == seen {
			timer.Reset(maxLeaseWait)
			continue
		}
		seen = s.claims.Load()
		lost, msgs, next, err := s.db.ReturnLostTasks(ctx, Lines{})
		idle = err == nil && next.IsZero()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("return lost tasks", "error", err)
		}
		for _, t := range lost {
			s.log.Info("task back on the board: its lease was lost", "task", t.ID, "workflow", store.Scope{Workflow: t.Workflow, Tag: t.Tag}.String())
		}
		s.publishAll(msgs)
		timer.Reset(waitUntil(next, !next.IsZero(), err, maxLeaseWait))
	}
}

// APITask is a task as agents (task_* tools) and HTTP clients (GET
// /tasks) see it: one conversion, so both always agree.
func APITask(t store.Task) api.Task {
	v := api.Task{ID: t.ID, Title: t.Title, Description: t.Description, Priority: t.Priority, State: string(t.State),
		Ready: t.Ready(), DependsOn: t.DependsOn, WaitingOn: t.WaitingOn, Parent: t.Parent, Subtasks: t.Subtasks,
		Assignee: t.Assignee, Role: t.Role, Artifacts: t.Artifacts, CreatedBy: t.CreatedBy, Holder: t.Holder, HolderRun: t.HolderRun, Percent: t.Percent, Result: t.Result, Error: t.Error,
		Retries: t.Retries, MaxRetries: t.MaxRetries, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if v.DependsOn == nil {
		v.DependsOn = []string{}
	}
	if !t.LeaseExpiresAt.IsZero() {
		e := t.LeaseExpiresAt
		v.LeaseExpiresAt = &e
	}
	return v
}

// APITaskEvents converts a task's history.
func APITaskEvents(ev []store.TaskEvent) []contract.TaskEvent {
	out := make([]contract.TaskEvent, 0, len(ev))
	for _, e := range ev {
		out = append(out, contract.TaskEvent{At: e.At, Actor: e.Actor, Kind: string(e.Kind), State: string(e.State), Note: e.Note, Percent: e.Percent})
	}
	return out
}
