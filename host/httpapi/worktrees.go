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
	// List reports every workflow's worktrees; Status one workflow's, or
	// with agent one agent's.
	List(ctx context.Context) ([]api.Worktree, error)
	Status(ctx context.Context, scope store.Scope, agent string) ([]api.Worktree, error)
	Integrate(ctx context.Context, key store.AgentKey, by, target string) (api.IntegrateResult, error)
	Discard(ctx context.Context, key store.AgentKey, by, reason string, force bool) (api.DiscardResult, error)
}

// handleWorktrees is GET /worktrees[?target=@wf[:tag] | agent@wf[:tag]].
func (h *Server) handleWorktrees(w http.ResponseWriter, r *http.Request) error {
	list, err := h.listWorktrees(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.WorktreeList{Worktrees: list})
	return nil
}

func (h *Server) listWorktrees(r *http.Request) ([]api.Worktree, error) {
	target := r.URL.Query().Get("target")
	if target == "" {
		return h.worktrees.List(r.Context())
	}
	t, err := api.ParseTarget(target)
	if err != nil {
		return nil, err
	}
	return h.worktrees.Status(r.Context(), scopeOf(t), t.Agent) // t.Agent "": the whole workflow
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
