package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// maxGateBody bounds a gate request: a tool name, a command line and a
// path.
const maxGateBody = 256 << 10

// Gate is the daemon's one decision on an agent's tool calls by the phase
// of its effort (host/gate.Gate).
type Gate interface {
	Decide(ctx context.Context, k store.AgentKey, call skill.Call) (skill.Decision, error)
	// ObserveTool records that k called tool, as evidence of its
	// effort's current phase.
	ObserveTool(ctx context.Context, k store.AgentKey, runID, tool string) error
	// CaughtUp waits (briefly) until the events of run runID have shown
	// its call of the effort tool, so that the phase's evidence includes
	// every tool result the run reported before the call.
	CaughtUp(ctx context.Context, runID, tool string)
}

// checkPhase asks the gate about a call of the daemon's own tool name by
// me: a refusal is an error whose text is the phase's reason, which the
// agent reads as the tool's result. The effort tools are always allowed
// (skill.EffortTools).
func (s *Server) checkPhase(ctx context.Context, me store.AgentKey, name string) error {
	if s.Gate == nil {
		return nil
	}
	d, err := s.Gate.Decide(ctx, me, skill.Call{Tool: name})
	switch {
	case err != nil:
		s.log.Error("gate", "tool", name, "agent", me.String(), "error", err)
		return api.Errorf(api.CodeUnavailable, "not run: the daemon could not decide whether the phase of your effort allows %s (%v); try again", name, err)
	case !d.Allowed:
		return api.Errorf(api.CodePermission, "not run: %s", d.Reason)
	}
	return nil
}

// observeTool records a daemon tool called by an outside agent or a live
// session. A daemon run's calls are observed from its events by the
// runner (every backend reports its tool results), so they are not
// recorded twice here.
func (s *Server) observeTool(ctx context.Context, me store.AgentKey, name string) {
	if s.Gate == nil || runOf(ctx) != "" {
		return
	}
	if err := s.Gate.ObserveTool(ctx, me, "", name); err != nil {
		s.log.Warn("record an observation", "tool", name, "agent", me.String(), "error", err)
	}
}

// serveGate answers a plugin's gate request (POST …/mcp/gate) for the
// token's agent me: a tools.GateCall in, a tools.GateDecision out. The
// agent is the token's, never one the body names, so a run cannot ask
// for another agent.
func (s *Server) serveGate(w http.ResponseWriter, r *http.Request, me store.AgentKey) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		gateError(w, api.Errorf(api.CodeInvalid, "the gate takes POST with a JSON body {tool, command, path}"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxGateBody+1))
	if err != nil {
		return // the client left
	}
	var call tools.GateCall
	switch {
	case len(body) > maxGateBody:
		gateError(w, api.Errorf(api.CodeTooLarge, "a gate request is at most %d KiB", maxGateBody>>10))
		return
	case json.Unmarshal(body, &call) != nil:
		gateError(w, api.Errorf(api.CodeInvalid, "the gate takes a JSON object {tool, command, path}: %.80q is not one", body))
		return
	case strings.TrimSpace(call.Tool) == "":
		gateError(w, api.Errorf(api.CodeInvalid, "the gate request names no tool: give {\"tool\": \"run_shell\", \"command\": \"…\"}"))
		return
	}
	out := tools.GateDecision{Allowed: true}
	if s.Gate != nil {
		d, err := s.Gate.Decide(r.Context(), me, skill.Call{Tool: call.Tool, Command: call.Command, Path: call.Path})
		switch {
		case err != nil:
			s.log.Error("gate", "tool", call.Tool, "agent", me.String(), "error", err)
			out = tools.GateDecision{Reason: fmt.Sprintf("the daemon could not decide whether the phase of your effort allows %s (%v); try again", call.Tool, err)}
		default:
			out = tools.GateDecision{Allowed: d.Allowed, Reason: d.Reason}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// gateError answers a bad gate request with the error vocabulary.
func gateError(w http.ResponseWriter, e *api.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(api.HTTPStatus(e.Code))
	_ = json.NewEncoder(w).Encode(e)
}

// caughtUp lets a run's events catch up with its call of an effort tool
// that checks evidence (Gate.CaughtUp).
func (s *Server) caughtUp(ctx context.Context, tool string) {
	if s.Gate != nil {
		s.Gate.CaughtUp(ctx, runOf(ctx), tool)
	}
}
