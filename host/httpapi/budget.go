package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

// handleSetBudget is PUT /budgets/{target}: a workflow:tag's budget
// (@wf:tag) or an agent's. It replaces what the workflow file set until the
// file is started or edited again.
func (h *Server) handleSetBudget(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	var req api.BudgetRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.USD == nil && req.Tokens == nil && req.Runs == nil {
		return api.Errorf(api.CodeInvalid, "a budget needs a limit: give usd, tokens or runs (or DELETE to clear it)")
	}
	b := store.Budget{Workflow: t.Workflow, Tag: t.Tag, Agent: t.Agent, USD: req.USD, Tokens: req.Tokens, Runs: req.Runs, Hard: req.Hard}
	if err := h.db.SetBudget(r.Context(), b); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "budget set", Target: t.Display()})
	return nil
}

// handleClearBudget is DELETE /budgets/{target}.
func (h *Server) handleClearBudget(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	if _, err := h.db.GetWorkflow(r.Context(), t.Workflow, t.Tag); err != nil {
		return err
	}
	if err := h.db.ClearBudget(r.Context(), scopeOf(t), t.Agent); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "budget cleared", Target: t.Display()})
	return nil
}

// workflowBudget is wf's own budget with what its runs have spent since
// the workflow (re)started, the spend the scheduler holds it to; nil when
// it has none.
func (h *Server) workflowBudget(ctx context.Context, wf store.Workflow) (*contract.Budget, error) {
	scope := store.Scope{Workflow: wf.Name, Tag: wf.Tag}
	bs, err := h.db.Budgets(ctx, scope)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		if b.Agent != "" {
			continue
		}
		st, err := h.db.Stats(ctx, scope, wf.StartedAt)
		if err != nil {
			return nil, err
		}
		return &contract.Budget{USD: b.USD, Tokens: b.Tokens, Runs: b.Runs, Hard: b.Hard, Spent: *apiSpend(st)}, nil
	}
	return nil, nil
}
