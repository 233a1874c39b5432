package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// handleClaudeHook is POST /agents/{target}/hook: one Claude Code hook of a
// session acting as the agent (team.Service.Hook).
func (h *Server) handleClaudeHook(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	var call api.HookCall
	if err := decodeJSON(w, r, &call); err != nil {
		return err
	}
	d, err := h.team.Hook(r.Context(), keyOf(t), call)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// attachSession shows a's attached Claude Code session on its view: an
// idle agent with one is attached (api.AgentAttached).
func attachSession(a *api.Agent, s store.Session, ok bool) {
	if !ok {
		return
	}
	a.Session = &api.AttachedSession{ID: s.ID, Cwd: s.Cwd, AttachedAt: s.AttachedAt.UTC(), HeartbeatAt: s.HeartbeatAt.UTC()}
	if a.State == api.AgentIdle {
		a.State = api.AgentAttached
	}
}
