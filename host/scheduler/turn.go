package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// settleHookKey carries a turn's store.TxHook to its settle.
type settleHookKey struct{}

// Turn runs a turn the cluster's queue handed to this member: attempt of
// attempts (the queue retries a failed one with backoff). It checks what a
// loop's tick checks (state, workflow, budget) and runs the agent if it
// has unread messages. complete, when set, runs in the transaction that
// settles a successful run (the queue's job ends with it), so a message
// that arrives after that commit gets a turn of its own, and one that came
// before it is seen here: Turn asks for the next turn itself if unread
// messages are left. busy says the agent is running on some member now:
// the queue tries again shortly. An error is an attempt that failed and
// may be retried; after the last one, or a permanent error, the agent is
// failed and Turn returns nil.
//
// fired is the due time of a scheduled wake-up, zero for a plain turn. A
// member asks for the wake-up its own reading of the agent's last
// activity makes due; one that read it before a run that has ended since
// asks too early. So the wake-up goes ahead only if the store still makes
// it due. A stale one does nothing: the member that asked for it counts
// the next from the run's end, as the others do (nextDue).
func (s *Scheduler) Turn(ctx context.Context, key store.AgentKey, fired time.Time, attempt, attempts int, complete store.TxHook) (busy bool, err error) {
	s.Add(key) // an agent another member created: schedule it here too
	l := s.loopOf(key)
	if l == nil {
		return false, nil // removed, or the daemon is stopping
	}
	a, err := s.db.GetAgent(ctx, key)
	switch {
	case api.ErrorCode(err) == api.CodeNotFound:
		return false, nil
	case err != nil:
		return false, err
	case a.State == api.AgentRunning:
		return true, nil
	case a.Backend == "external" || !a.State.Schedulable():
		return false, nil
	}
	scheduled := !fired.IsZero()
	if scheduled {
		next, ok, err := s.nextDue(ctx, a, time.Time{})
		switch {
		case err != nil:
			return false, err
		case !ok:
			return false, nil // the schedule was removed
		case next.After(fired):
			return false, nil
		}
	}
	bs, run, err := s.due(ctx, a, scheduled, 0)
	if err != nil || !run {
		return false, err
	}
	if complete != nil {
		ctx = context.WithValue(ctx, settleHookKey{}, complete)
	}
	out, err := s.runOnce(ctx, l, a, attempt, bs)
	var crossed *overBudgetError
	switch {
	case err == nil:
		l.finishAll(out, nil, false)
		if left, derr := s.db.InboxDepth(ctx, key); derr == nil && left > 0 && s.dispatch != nil {
			_, err = s.dispatch.Enqueue(ctx, key) // what came during the run
		}
		return false, err
	case ctx.Err() != nil:
		return false, ctx.Err() // the member is stopping: the queue gives the job to another
	case errors.Is(err, errNotSchedulable):
		if a, gerr := s.db.GetAgent(ctx, key); gerr == nil && a.State == api.AgentRunning {
			return true, nil // another member started it first
		}
		return false, nil
	case errors.Is(err, errUserCancel):
		l.finishAll(out, err, false)
		return false, nil
	case errors.As(err, &crossed):
		l.finishAll(out, err, false)
		s.stopOverBudget(ctx, a, crossed.spent)
		return false, nil
	case backend.IsPermanent(err) || attempt >= attempts:
		s.log.Warn("agent failed", "agent", key.String(), "attempts", attempt, "error", err)
		l.finishAll(out, err, false)
		s.moveState(ctx, key, []api.AgentState{api.AgentIdle, api.AgentRunning}, api.AgentFailed, err.Error())
		s.notifyFailed(ctx, key, attempt, out, err)
		return false, nil
	}
	s.log.Info("run failed; the queue retries it", "agent", key.String(), "attempt", attempt, "error", err)
	return false, err
}

// RetryDelay is the backoff before attempt n+1 after attempt n failed,
// the same as a loop's own retries.
func (s *Scheduler) RetryDelay(n int) time.Duration {
	return retryDelay(s.cfg.RetryBase, n, rand.Float64())
}
