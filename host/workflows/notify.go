package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Notifications keeps workflows' notify: webhooks and tells them of
// events (host/notify.Notifier).
type Notifications interface {
	// Check refuses webhooks whose secret_env the daemon lacks, with
	// path:line.
	Check(path string, subs []workflow.Notify) error
	// Subscribe records scope's webhooks (none removes them).
	Subscribe(ctx context.Context, scope store.Scope, subs []workflow.Notify) error
	// Wants reports whether anyone listens to kind from scope.
	Wants(ctx context.Context, scope store.Scope, kind notify.Kind) bool
	Notify(ctx context.Context, ev notify.Event)
}

var _ Notifications = (*notify.Notifier)(nil)

func (ws *Manager) checkNotify(inst *workflow.Instance) error {
	if ws.notify == nil {
		return nil
	}
	return ws.notify.Check(inst.Path, inst.Notify)
}

func (ws *Manager) subscribe(ctx context.Context, scope store.Scope, inst *workflow.Instance) error {
	if ws.notify == nil {
		return nil
	}
	return ws.notify.Subscribe(ctx, scope, inst.Notify)
}

// idleSettle is how long the idle watch lets a burst of events settle
// before it looks at a team: a run's end, its reply and the next wake
// come together, and the team is idle only after all of them.
const idleSettle = 300 * time.Millisecond

// idleQueue is the idle watch's bus queue: it only notes scopes.
const idleQueue = 1024

// WatchIdle tells the owner when a running workflow's team finishes its
// work (the `idle` notification), until ctx ends. "Finished" is what
// `agent-worker run` waits for (Progress: no agent running or with unread
// messages, no proposal open), seen after a change: the watch looks at a
// team a moment after its events settle, and only at workflows whose
// file this daemon watches (one member in a cluster) and someone
// subscribed to idle.
//
// It also posts the reports webhook deliveries armed (Triggers.Fire),
// whenever it finds a team with some idle, transition or not: a report
// is armed after its delivery's message is posted, so a team idle after
// that has done the work the delivery asked for.
func (ws *Manager) WatchIdle(ctx context.Context) {
	sub := ws.team.Bus.Subscribe(idleQueue)
	defer func() { sub.Close() }()
	// idle is each scope's state when last looked at; a scope not in it
	// has no baseline yet (the daemon just started), and its first look
	// sets one without telling anyone.
	idle := map[store.Scope]bool{}
	dirty := map[store.Scope]bool{}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			// Fell behind: look at every team again.
			sub.Close()
			sub = ws.team.Bus.Subscribe(idleQueue)
			for s := range idle {
				dirty[s] = true
			}
			settle.Reset(idleSettle)
		case ev := <-sub.C:
			scope := ev.Agent.Scope()
			if ev.Message != nil {
				scope = store.Scope{Workflow: ev.Message.Workflow, Tag: ev.Message.Tag}
			}
			if scope.Workflow == "" || scope.Workflow == api.GlobalWorkflow {
				continue
			}
			if ev.Kind == team.EventWorkflow && (ev.State == "started" || ev.State == "resumed") {
				idle[scope] = false // a (re)start is work to come: its end is news
			}
			if len(dirty) == 0 {
				settle.Reset(idleSettle)
			}
			dirty[scope] = true
		case <-settle.C:
			for scope := range dirty {
				delete(dirty, scope)
				ws.lookIdle(ctx, scope, idle)
			}
		}
	}
}

// lookIdle checks one team and tells the owner if it has just gone idle.
func (ws *Manager) lookIdle(ctx context.Context, scope store.Scope, idle map[store.Scope]bool) {
	wf, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil || !ws.owns(wf) {
		delete(idle, scope)
		return
	}
	wantsIdle := ws.notify != nil && ws.notify.Wants(ctx, scope, notify.Idle)
	reports := ws.triggers != nil && ws.triggers.Pending(ctx, scope)
	if !wantsIdle && !reports {
		delete(idle, scope)
		return
	}
	p, err := ws.Progress(ctx, wf)
	if err != nil {
		return
	}
	now := wf.State == api.WorkflowRunning && p.Idle
	if now && reports {
		ws.triggers.Fire(ctx, scope)
	}
	if !wantsIdle {
		delete(idle, scope)
		return
	}
	was, seen := idle[scope]
	idle[scope] = now
	if !now || !seen || was {
		return
	}
	target := displayScope(scope)
	text := fmt.Sprintf("%s is idle: its team has finished its work (%d run(s), %d failed, $%.4f since it started)", target, p.Runs, p.FailedRuns, p.CostUSD)
	if len(p.Failed) > 0 {
		text += fmt.Sprintf("; failed agents: %v", p.Failed)
	}
	ws.notify.Notify(ctx, notify.Event{Kind: notify.Idle, Workflow: scope.Workflow, Tag: scope.Tag, Text: text,
		Fields: map[string]any{"runs": p.Runs, "failed_runs": p.FailedRuns, "failed_agents": p.Failed, "cost_usd": p.CostUSD,
			"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "duration_ms": p.DurationMS}})
}
