package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// Gate is the daemon's one decision on an agent's tool calls by the phase
// of its effort (host/gate.Gate): live sessions ask it here, daemon runs
// through /mcp/gate, so both get the same answer (invariant 17).
type Gate interface {
	Decide(ctx context.Context, k store.AgentKey, call skill.Call) (skill.Decision, error)
}

// handleSessionGate is POST /agents/{target}/gate: one tool call of a live
// Claude Code session acting as the agent (`agent-worker hook PreToolUse`),
// decided by the gate. A refusal is published as a gate event with the
// session's id, the tool and the reason, as a daemon run's refusal is a
// gate event of its transcript. An error answers an error: the hook then
// lets the call run, since a live session must never break on the daemon.
func (h *Server) handleSessionGate(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	var call api.SessionGateCall
	if err := decodeJSON(w, r, &call); err != nil {
		return err
	}
	if strings.TrimSpace(call.Tool) == "" {
		return api.Errorf(api.CodeInvalid, "the call names no tool: give {\"tool\": \"Edit\", \"path\": \"/abs/file\"}")
	}
	if h.gate == nil {
		writeJSON(w, http.StatusOK, api.SessionGateDecision{Allowed: true})
		return nil
	}
	k := keyOf(t)
	d, err := h.gate.Decide(r.Context(), k, skill.Call{Tool: call.Tool, Command: call.Command, Path: call.Path})
	if err != nil {
		return err
	}
	if !d.Allowed {
		h.log.Info("gate refused a session's call", "agent", k.String(), "session", call.SessionID, "tool", call.Tool, "rule", d.Rule)
		h.team.GateRefused(r.Context(), k, call.SessionID, call.Tool, call.Command+call.Path, d.Reason)
	}
	writeJSON(w, http.StatusOK, api.SessionGateDecision{Allowed: d.Allowed, Reason: d.Reason})
	return nil
}

// handleStatusLine is GET /agents/{target}/statusline: the agent's active
// effort and phase and its unread count, for Claude Code's status line,
// which runs it after every turn: two indexed reads, nothing more.
func (h *Server) handleStatusLine(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	k := keyOf(t)
	unread, err := h.db.InboxDepth(r.Context(), k)
	if err != nil {
		return err
	}
	out := api.StatusLine{Agent: t.Display(), Unread: unread}
	e, found, err := h.db.ActiveEffort(r.Context(), k)
	if err != nil {
		return err
	}
	if found {
		out.Effort, out.Skill, out.Ordinal, out.Phase, out.PhaseName = e.ID, e.Skill, e.Ordinal, e.Phase+1, e.PhaseName
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
