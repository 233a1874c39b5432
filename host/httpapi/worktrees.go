package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// Worktrees reports, integrates and discards the agents' git worktrees
// (host/worktrees.Service); the HTTP API acts as the user, who may do all
// of it.
type Worktrees interface {
	// List reports scope's worktrees, or every workflow's with scope nil.
	List(ctx context.Context, scope *store.Scope) ([]api.Worktree, error)
	Status(ctx context.Context, scope store.Scope, agent string) ([]api.Worktree, error)
	Integrate(ctx context.Context, key store.AgentKey, by, target string) (api.IntegrateResult, error)
	Discard(ctx context.Context, key store.AgentKey, by, reason string, force bool) (api.DiscardResult, error)
}

// handleWorktrees is GET /worktrees[?target=@wf[:tag] | agent@wf[:tag]].
func (h *Server) handleWorktrees(w http.ResponseWriter, r *http.Request) error {
	var (
		list []api.Worktree
		err  error
	)
	switch target := r.URL.Query().Get("target"); {
	case target == "":
		list, err = h.worktrees.List(r.Context(), nil)
	default:
		t, perr := api.ParseTarget(target)
		if perr != nil {
			return perr
		}
		scope := scopeOf(t)
		if t.IsScope() {
			list, err = h.worktrees.List(r.Context(), &scope)
		} else {
			list, err = h.worktrees.Status(r.Context(), scope, t.Agent)
		}
	}
	if err != nil {
		return err
	}
	if list == nil {
		list = []api.Worktree{}
	}
	writeJSON(w, http.StatusOK, api.WorktreeList{Worktrees: list})
	return nil
}

// handleIntegrate is POST /worktrees/{agent}/integrate.
func (h *Server) handleIntegrate(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("agent"))
	if err != nil {
		return err
	}
	var req api.IntegrateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	res, err := h.worktrees.Integrate(r.Context(), keyOf(t), team.SenderUser, req.Target)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// handleDiscard is POST /worktrees/{agent}/discard.
func (h *Server) handleDiscard(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("agent"))
	if err != nil {
		return err
	}
	var req api.DiscardRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	res, err := h.worktrees.Discard(r.Context(), keyOf(t), team.SenderUser, req.Reason, req.Force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
