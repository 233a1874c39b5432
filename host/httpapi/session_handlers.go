package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
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
// idle agent with one is attached (api.AgentAttached), unless the session
// has gone stale at now (team.SessionStale): then it stays idle and the
// session is shown stale.
func attachSession(a *api.Agent, s store.Session, ok bool, now time.Time) {
	if !ok {
		return
	}
	a.Session = &api.AttachedSession{ID: s.ID, Cwd: s.Cwd, AttachedAt: s.AttachedAt.UTC(), HeartbeatAt: s.HeartbeatAt.UTC(),
		Stale: team.SessionStale(s, now)}
	if a.State == api.AgentIdle && !a.Session.Stale {
		a.State = api.AgentAttached
	}
}

// staleProblem is the problem status lists for a's stale session; "" for
// none.
func staleProblem(a api.Agent, now time.Time) string {
	s := a.Session
	if s == nil || !s.Stale {
		return ""
	}
	return fmt.Sprintf("agent %s: its Claude Code session %s (in %s) has called no hook for %s and counts as gone; %s is idle until the session's next hook (or end it, and start a new one there)",
		a.Target, s.ID, s.Cwd, now.Sub(s.HeartbeatAt).Round(time.Second), a.Target)
}
