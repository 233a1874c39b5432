package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/workflows"
	"github.com/agent-worker/agent-worker/store"
)

// Forker starts a new tag of a workflow from its team's state at a
// channel seq (host/workflows.Manager.Fork). It is asked of Workflows
// only when a fork is requested, so fakes without it still serve the
// other routes.
type Forker interface {
	Fork(ctx context.Context, from store.Scope, req api.ForkWorkflow) (workflows.Forked, error)
}

var _ Forker = (*workflows.Manager)(nil)

// handleForkWorkflow is POST /workflows/{name}/{tag}/fork.
func (h *Server) handleForkWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	f, ok := h.wfs.(Forker)
	if !ok {
		return api.Errorf(api.CodeInternal, "this daemon cannot fork workflows")
	}
	var req api.ForkWorkflow
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	from := scopeOf(t)
	done, err := f.Fork(r.Context(), from, req)
	if err != nil && done.Scope.Tag == "" {
		return err
	}
	wf, werr := h.apiWorkflow(r.Context(), done.Scope, false)
	if werr != nil {
		return werr
	}
	if err != nil {
		return err // made, but --run's resume failed: the fork is there, paused
	}
	out := api.Fork{Workflow: wf, From: t.Display(), At: done.Seed.Seq, AtTime: done.Seed.At, Messages: done.Seed.Messages,
		Tasks: done.Seed.Tasks, Documents: done.Documents, DocumentsChanged: done.Changed, Running: done.Running}
	if out.Tasks == nil {
		out.Tasks = map[string]string{}
	}
	if out.Documents == nil {
		out.Documents = []string{}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
