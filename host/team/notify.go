package team

import (
	"context"

	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/store"
)

// Notifier queues a notification for the owner (host/notify.Notifier):
// it returns at once and never fails the caller.
type Notifier interface {
	Notify(ctx context.Context, ev notify.Event)
}

var _ Notifier = (*notify.Notifier)(nil)

type nopNotifier struct{}

func (nopNotifier) Notify(context.Context, notify.Event) {}

// Notify queues ev for the owner: the questions and approvals call it
// (kinds notify.Question and notify.Approval) once they are recorded.
func (s *Service) Notify(ctx context.Context, ev notify.Event) { s.notify.Notify(ctx, ev) }

// notifyLoopGuard tells the owner that the loop guard paused scope; line
// is what the channel was told.
func (s *Service) notifyLoopGuard(ctx context.Context, scope store.Scope, line string, senders []string, rounds int) {
	s.notify.Notify(ctx, notify.Event{Kind: notify.LoopGuard, Workflow: scope.Workflow, Tag: scope.Tag, Text: line,
		Fields: map[string]any{"agents": senders, "max_rounds": rounds}})
}
