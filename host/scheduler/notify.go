package scheduler

import (
	"context"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/store"
)

// Notifier queues a notification for the owner (host/notify.Notifier):
// it returns at once and never fails the caller.
type Notifier interface {
	Notify(ctx context.Context, ev notify.Event)
}

var _ Notifier = (*notify.Notifier)(nil)

// notifyFailed tells the owner that key failed for good after attempt
// attempts, if it did: a pause or stop that came during the retries left
// it as the user asked, and that is no failure to report.
func (s *Scheduler) notifyFailed(ctx context.Context, key store.AgentKey, attempts int, out runspec.Outcome, err error) {
	if s.cfg.Notify == nil {
		return
	}
	if a, gerr := s.db.GetAgent(context.WithoutCancel(ctx), key); gerr != nil || a.State != api.AgentFailed {
		return
	}
	target := api.Target{Agent: key.Name, Workflow: key.Workflow, Tag: key.Tag}.Display()
	ev := notify.Event{Kind: notify.RunFailed, Workflow: key.Workflow, Tag: key.Tag, Agent: key.Name,
		Text:   fmt.Sprintf("%s failed after %d attempt(s): %s. Its messages wait unread; `agent-worker resume %s` tries again.", target, attempts, shortLine(err.Error()), target),
		Fields: map[string]any{"error": err.Error(), "attempts": attempts}}
	if out.Run.ID != "" {
		ev.IDs = map[string]string{"run": out.Run.ID}
	}
	s.cfg.Notify.Notify(ctx, ev)
}

// notifyOverBudget tells the owner that a's budget (its own, or its
// workflow's) stopped it; line is what the channel was told.
func (s *Scheduler) notifyOverBudget(ctx context.Context, a store.Agent, sb *spentBudget, target, line string) {
	if s.cfg.Notify == nil {
		return
	}
	ev := notify.Event{Kind: notify.OverBudget, Workflow: a.Workflow, Tag: a.Tag, Agent: sb.budget.Agent, Text: line,
		Fields: map[string]any{"target": target, "limit": sb.limit, "runs": sb.spent.Runs,
			"tokens": sb.spent.InputTokens + sb.spent.OutputTokens, "cost_usd": sb.spent.CostUSD}}
	s.cfg.Notify.Notify(ctx, ev)
}

// shortLine is an error as one line of at most 500 characters, for the
// text a person reads; the whole error goes in the event's fields.
func shortLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}
