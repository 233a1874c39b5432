package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/store"
)

// Notifier queues a notification for the owner (host/notify.Notifier):
// it returns at once and never fails the caller.
type Notifier interface {
	Notify(ctx context.Context, ev notify.Event)
}

var _ Notifier = (*notify.Notifier)(nil)

// notifyDown tells the owner that a member was found dead and its work
// taken back: the daemon-wide subscriptions hear it, and those of every
// workflow whose runs or agents it had. Only the member whose recovery
// took the work back sees r, so it is told once.
func (m *Member) notifyDown(ctx context.Context, r store.Recovered) {
	if m.cfg.Notify == nil {
		return
	}
	var scopes []store.Scope
	add := func(s store.Scope) {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	runs := make([]string, 0, len(r.Runs))
	for _, run := range r.Runs {
		runs = append(runs, run.ID)
		add(run.Agent.Scope())
	}
	agents := make([]string, 0, len(r.Agents))
	for _, k := range r.Agents {
		agents = append(agents, k.String())
		add(k.Scope())
	}
	m.cfg.Notify.Notify(ctx, notify.Event{Kind: notify.MemberDown, Also: scopes,
		IDs:  map[string]string{"member": r.Daemon.ID},
		Text: fmt.Sprintf("cluster member %s on %s stopped answering; %s took back its %d run(s) in flight (recorded failed) and %d agent(s), which run again", r.Daemon.ID, r.Daemon.Host, m.cfg.ID, len(r.Runs), len(r.Agents)),
		Fields: map[string]any{"member": r.Daemon.ID, "host": r.Daemon.Host, "address": r.Daemon.Address, "taken_by": m.cfg.ID,
			"runs": runs, "agents": agents}})
}
