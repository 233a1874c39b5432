package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
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
	// Integrate and Discard act on key's worktree of repository repo
	// ("" for the workflow's own).
	Integrate(ctx context.Context, key store.AgentKey, repo, by, target string) (api.IntegrateResult, error)
	Discard(ctx context.Context, key store.AgentKey, repo, by, reason string, force bool) (api.DiscardResult, error)
	// Queue lists the merge queue (of scope, every workflow's when nil),
	// QueueEntry shows one entry with its check logs, Dequeue takes one
	// out.
	Queue(ctx context.Context, scope *store.Scope, all bool) ([]api.QueueEntry, error)
	QueueEntry(ctx context.Context, id string) (api.QueueEntry, error)
	Dequeue(ctx context.Context, id, by, reason string) (api.QueueEntry, error)
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
	res, err := h.worktrees.Integrate(r.Context(), keyOf(t), req.Repo, team.SenderUser, req.Target)
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
	var req contract.DiscardRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	res, err := h.worktrees.Discard(r.Context(), keyOf(t), req.Repo, team.SenderUser, req.Reason, req.Force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// handleQueue is GET /worktrees/queue[?target=@wf[:tag]][&all=true].
func (h *Server) handleQueue(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var scope *store.Scope
	if target := q.Get("target"); target != "" {
		t, err := api.ParseTarget(target)
		if err != nil {
			return err
		}
		if t.Agent != "" {
			return api.Errorf(api.CodeInvalid, "the merge queue belongs to a workflow: name it as @%s, not %s", t.Workflow, target)
		}
		s := scopeOf(t)
		scope = &s
	}
	list, err := h.worktrees.Queue(r.Context(), scope, q.Get("all") == "true" || q.Get("all") == "1")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.QueueList{Entries: list})
	return nil
}

// handleQueueEntry is GET /worktrees/queue/{id}.
func (h *Server) handleQueueEntry(w http.ResponseWriter, r *http.Request) error {
	e, err := h.worktrees.QueueEntry(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

// handleDequeue is DELETE /worktrees/queue/{id}[?reason=R], as the user.
func (h *Server) handleDequeue(w http.ResponseWriter, r *http.Request) error {
	e, err := h.worktrees.Dequeue(r.Context(), r.PathValue("id"), team.SenderUser, r.URL.Query().Get("reason"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}
