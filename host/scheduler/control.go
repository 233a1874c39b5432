package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// Pause stops an agent from starting runs until it is resumed: its
// messages keep arriving and wait unread, and a run in flight finishes
// normally (its end leaves the agent paused). Pausing a paused agent is
// a no-op; a failed, over-budget or stopped agent runs nothing already,
// and is refused so that its reason is not hidden.
func (s *Scheduler) Pause(ctx context.Context, key store.AgentKey) error {
	if s.moveState(ctx, key, []api.AgentState{api.AgentIdle, api.AgentRunning, api.AgentPaused}, api.AgentPaused, "") {
		return nil
	}
	a, err := s.db.GetAgent(ctx, key)
	if err != nil {
		return noAgent(key, err)
	}
	return api.Errorf(api.CodeConflict, "%s is %s and starts no run until `agent-worker resume %s`: nothing to pause",
		display(key), a.State, display(key))
}

// Resume clears a paused, failed, over-budget or stopped agent so its
// unread messages run again, and wakes it.
//
// An agent of a stopped workflow is refused: none of that workflow's
// agents runs until the workflow is started again, so "resumed" would be
// a promise its messages never keep.
func (s *Scheduler) Resume(ctx context.Context, key store.AgentKey) error {
	if wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag); err == nil && wf.State == api.WorkflowStopped {
		if _, err := s.db.GetAgent(ctx, key); err != nil {
			return noAgent(key, err)
		}
		scope := api.Target{Workflow: key.Workflow, Tag: key.Tag}.Display()
		start := "agent-worker start <its file>"
		if wf.SourcePath != "" {
			start = "agent-worker start " + wf.SourcePath
		}
		if key.Tag != api.DefaultTag {
			start += " --tag " + key.Tag
		}
		return api.Errorf(api.CodeConflict, "%s's workflow %s is stopped, and none of its agents runs until it is started again: %s",
			display(key), scope, start)
	}
	from := []api.AgentState{api.AgentPaused, api.AgentFailed, api.AgentOverBudget, api.AgentStopped}
	if !s.moveState(ctx, key, from, api.AgentIdle, "") {
		a, err := s.db.GetAgent(ctx, key)
		if err != nil {
			return noAgent(key, err)
		}
		if wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag); err == nil && wf.State != api.WorkflowRunning && wf.State.Live() {
			scope := api.Target{Workflow: key.Workflow, Tag: key.Tag}.Display()
			return api.Errorf(api.CodeConflict, "%s is %s; its workflow %s is %s: resume it with `agent-worker resume %s`",
				display(key), a.State, scope, wf.State, scope)
		}
		return api.Errorf(api.CodeConflict, "%s is %s, not paused, failed or over budget: nothing to resume", display(key), a.State)
	}
	s.Add(key)
	s.Wake(key)
	return nil
}

// CancelAgent ends the run in flight of an agent (see CancelRun) and
// returns its id.
func (s *Scheduler) CancelAgent(ctx context.Context, key store.AgentKey) (string, error) {
	if _, err := s.db.GetAgent(ctx, key); err != nil {
		return "", noAgent(key, err)
	}
	l := s.loopOf(key)
	id, done := "", (<-chan struct{})(nil)
	if l != nil {
		id, done = l.cancelRun("")
	}
	if done == nil && s.dispatch != nil {
		// In a cluster the run may be on another member.
		runs, err := s.db.ListRuns(ctx, store.RunFilter{Agent: key, Limit: 1})
		if err == nil && len(runs) == 1 && !runs[0].State.Ended() {
			return runs[0].ID, s.CancelRun(ctx, runs[0].ID)
		}
	}
	if done == nil {
		return "", api.Errorf(api.CodeConflict, "%s has no run in flight: nothing to cancel", display(key))
	}
	return id, waitRunEnd(ctx, done)
}

// CancelRun ends a run in flight: its plugin's whole process group is
// killed, the run is recorded cancelled, the inbox it was shown stays
// unread (the agent's next run sees it again) and the agent goes back to
// idle. It is not a failed attempt: nothing is retried. It returns once
// the run's end is recorded. A run that has ended, or is unknown, is
// refused and nothing changes.
func (s *Scheduler) CancelRun(ctx context.Context, runID string) error {
	r, _, err := s.db.GetRun(ctx, runID)
	if api.ErrorCode(err) == api.CodeNotFound {
		return api.Errorf(api.CodeNotFound, "no run %s: `agent-worker runs` lists the runs there are", runID)
	}
	if err != nil {
		return err
	}
	if r.State.Ended() {
		return api.Errorf(api.CodeConflict, "run %s has already ended (%s): nothing to cancel", runID, r.State)
	}
	l := s.loopOf(r.Agent)
	var done <-chan struct{}
	if l != nil {
		_, done = l.cancelRun(runID)
	}
	if done == nil && s.dispatch != nil && r.Daemon != "" {
		return s.cancelElsewhere(ctx, r)
	}
	if done == nil {
		return api.Errorf(api.CodeConflict, "run %s of %s is not in flight in this daemon: nothing to cancel", runID, display(r.Agent))
	}
	return waitRunEnd(ctx, done)
}

// cancelElsewhere asks the cluster member that runs r to cancel it (the
// request travels as an event) and waits until its end is recorded.
func (s *Scheduler) cancelElsewhere(ctx context.Context, r store.Run) error {
	sub := s.team.Bus.Subscribe(wakeQueue)
	defer func() { sub.Close() }()
	s.team.Bus.Publish(team.Event{Kind: team.EventCancelRun, Agent: r.Agent, State: r.ID})
	// The end arrives as a relayed run event; the store is read again
	// every so often in case the relay missed it.
	recheck := time.NewTicker(500 * time.Millisecond)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the cancelled run to end on member %s: %w", r.Daemon, ctx.Err())
		case ev := <-sub.C:
			if ev.Run == nil || ev.Run.ID != r.ID {
				continue
			}
		case <-sub.Dropped():
			sub = s.team.Bus.Subscribe(wakeQueue)
		case <-recheck.C:
		}
		cur, _, err := s.db.GetRun(ctx, r.ID)
		if err != nil {
			return err
		}
		if cur.State.Ended() {
			return nil
		}
	}
}

// cancelRun cancels the loop's run in flight, if it is the run id (any
// run for ""), and returns its id and a channel closed once its end is
// recorded; a nil channel when there was nothing to cancel.
func (l *agentLoop) cancelRun(id string) (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runCancel == nil || (id != "" && l.runID != id) {
		return "", nil
	}
	l.runCancel(errUserCancel)
	return l.runID, l.runDone
}

// waitRunEnd waits for a cancelled run's end to be recorded, or for the
// caller to give up (the cancel goes on).
func waitRunEnd(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the cancelled run to end: %w", ctx.Err())
	}
}

// noAgent words a missing agent for the control commands.
func noAgent(key store.AgentKey, err error) error {
	if api.ErrorCode(err) == api.CodeNotFound {
		return api.Errorf(api.CodeNotFound, "no agent %s: `agent-worker list` shows the agents there are", display(key))
	}
	return err
}

// display is an agent as the user writes it (alice, alice@review:pr-1).
func display(key store.AgentKey) string {
	return api.Target{Agent: key.Name, Workflow: key.Workflow, Tag: key.Tag}.Display()
}
