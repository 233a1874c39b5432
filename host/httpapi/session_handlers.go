package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
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

// sessionAgent is the ?agent= of a sessions request (nil: every agent).
func sessionAgent(r *http.Request) (*store.AgentKey, error) {
	a := r.URL.Query().Get("agent")
	if a == "" {
		return nil, nil
	}
	k, err := agentOf(a)
	return &k, err
}

// handleLiveSessions is GET /sessions[?agent=T]: the live Claude Code
// sessions as context windows, oldest first, each with where its effort
// is now.
func (h *Server) handleLiveSessions(w http.ResponseWriter, r *http.Request) error {
	k, err := sessionAgent(r)
	if err != nil {
		return err
	}
	rows, err := h.db.LiveSessions(r.Context(), k)
	if err != nil {
		return err
	}
	out := api.SessionList{Sessions: []api.LiveSession{}}
	phases := map[string]string{}
	for _, s := range rows {
		v := api.LiveSession{ID: s.ID, Agent: api.Target{Agent: s.Agent.Name, Workflow: s.Agent.Workflow, Tag: s.Agent.Tag}.Display(),
			Prev: s.Prev, Cwd: s.Cwd, Run: s.RunID, StartedAt: s.StartedAt.UTC(), HeartbeatAt: s.HeartbeatAt.UTC(),
			Heartbeats: s.Heartbeats, ContextTokens: s.ContextTokens, Loaded: s.Loaded, Effort: s.EffortID, Dehydrated: s.Dehydration != ""}
		if !s.EndedAt.IsZero() {
			at := s.EndedAt.UTC()
			v.EndedAt = &at
		}
		if s.EffortID != "" {
			p, ok := phases[s.EffortID]
			if !ok {
				if e, err := h.db.GetEffort(r.Context(), s.EffortID); err == nil {
					p = e.PhaseName
					if e.State != contract.EffortActive {
						p += " (" + string(e.State) + ")"
					}
				}
				phases[s.EffortID] = p
			}
			v.Phase = p
		}
		out.Sessions = append(out.Sessions, v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleSessionContinue is GET /sessions/continue[?agent=T]: the
// dehydration payload of the agent's newest session (of the newest
// session of any agent without ?agent=): the one its PreCompact stored,
// else one built now, for a person who starts the next session by hand.
func (h *Server) handleSessionContinue(w http.ResponseWriter, r *http.Request) error {
	k, err := sessionAgent(r)
	if err != nil {
		return err
	}
	rows, err := h.db.LiveSessions(r.Context(), k)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return api.Errorf(api.CodeNotFound, "no live session to continue: a Claude Code session with `agent-worker hooks install` records one")
	}
	last := rows[len(rows)-1]
	for _, s := range rows { // without ?agent=, the newest of any agent
		if s.HeartbeatAt.After(last.HeartbeatAt) {
			last = s
		}
	}
	payload := last.Dehydration
	if payload == "" {
		if payload, err = h.team.Payload(r.Context(), last.Agent, last, ""); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, api.SessionContinue{Agent: api.Target{Agent: last.Agent.Name, Workflow: last.Agent.Workflow, Tag: last.Agent.Tag}.Display(),
		Session: last.ID, Payload: payload})
	return nil
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
