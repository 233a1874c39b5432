package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// The control plane's routes: pause and resume an agent or a
// workflow:tag, cancel a run in flight. Each answers once the change is
// recorded (a cancel, once the run's end is).

func (h *Server) handlePause(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	if err := h.sched.Pause(r.Context(), keyOf(t)); err != nil {
		return err
	}
	if err := h.team.CancelApprovals(r.Context(), keyOf(t), "the agent was paused"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "paused", Target: t.Display()})
	return nil
}

func (h *Server) handlePauseWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	if err := h.wfs.Pause(r.Context(), scopeOf(t)); err != nil {
		return err
	}
	sc := scopeOf(t)
	if err := h.team.CancelApprovals(r.Context(), store.AgentKey{Workflow: sc.Workflow, Tag: sc.Tag}, "the workflow was paused"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "paused", Target: t.Display()})
	return nil
}

func (h *Server) handleResumeWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	if err := h.wfs.Resume(r.Context(), scopeOf(t)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "resumed", Target: t.Display()})
	return nil
}

func (h *Server) handleCancelAgent(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	id, err := h.sched.CancelAgent(r.Context(), keyOf(t))
	if err != nil {
		return err
	}
	if err := h.team.CancelApprovals(r.Context(), keyOf(t), "the run was cancelled"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Cancelled{Status: "cancelled", Run: id, Target: t.Display()})
	return nil
}

func (h *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.sched.CancelRun(r.Context(), id); err != nil {
		return err
	}
	run, _, err := h.db.GetRun(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Cancelled{Status: "cancelled", Run: id, Target: targetOf(run.Agent).Display()})
	return nil
}
