package runner

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// ContextSource reads what a run is shown when it starts, exactly as the
// daemon's MCP tools would show it (host/mcpserver.Server): the inbox page
// up to until, the channel tail, notes.md and the document list. The
// supervisor sends it with the run request, so that a backend's first
// model call waits for no MCP round trip.
type ContextSource interface {
	RunContext(ctx context.Context, me store.AgentKey, inbox []store.Message, until int64) (backend.RunContext, error)
}

// runContext is a run's context being read while its plugin process
// starts; get waits for it.
type runContext struct {
	done chan struct{}
	rc   *backend.RunContext
}

// readRunContext starts reading spec's context from s's ContextSource. A
// supervisor without one, or a read that fails, gives no context: the
// worker then fetches it over MCP itself, and meets any error there, as
// with a daemon that never sent one. The caller must call get before it
// returns, which also ends the read.
func (s *Supervisor) readRunContext(ctx context.Context, spec runspec.RunSpec, log hclog.Logger) *runContext {
	r := &runContext{done: make(chan struct{})}
	if spec.Context != nil {
		r.rc = spec.Context
		close(r.done)
		return r
	}
	src := s.cfg.Context
	if src == nil {
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		rc, err := src.RunContext(ctx, spec.Agent.Key(), spec.Inbox, spec.InboxUntil)
		if err != nil {
			log.Warn("read the run's context; the worker fetches it itself", "error", err)
			return
		}
		r.rc = &rc
	}()
	return r
}

// get returns the context, nil when there is none.
func (r *runContext) get() *backend.RunContext {
	<-r.done
	return r.rc
}
