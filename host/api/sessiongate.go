package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// HookPreToolUse is Claude Code's hook before each tool call: a live
// session's calls go through the daemon's gate (POST /agents/{target}/gate)
// as a daemon run's do, answered by `agent-worker hook PreToolUse`.
const HookPreToolUse = "PreToolUse"

// SessionGateCall is the body of POST /agents/{target}/gate: one tool call
// of a live Claude Code session acting as the agent, in the gate's terms
// (internal/claudehook.Calls).
type SessionGateCall struct {
	// SessionID is Claude Code's session id, for the daemon's record.
	SessionID string `json:"session_id,omitempty"`
	tools.GateCall
}

// SessionGateDecision is the gate's answer to a SessionGateCall (the same
// Decide as a daemon run's calls get, invariant 17).
type SessionGateDecision struct {
	Allowed bool `json:"allowed"`
	// Reason is why a call was refused: the phase's words, with what
	// would make it allowed.
	Reason string `json:"reason,omitempty"`
}

// SessionGate is POST /agents/{target}/gate: what `agent-worker hook
// PreToolUse` asks before each tool call of a live session.
func (c *Client) SessionGate(ctx context.Context, t Target, call SessionGateCall) (SessionGateDecision, error) {
	var d SessionGateDecision
	return d, c.do(ctx, http.MethodPost, "/agents/"+url.PathEscape(t.String())+"/gate", call, &d)
}

// GateEvent is the data of the gate event of GET /events: the daemon's
// gate refused a tool call of an agent's live session.
type GateEvent struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	Tool    string `json:"tool"`
	Reason  string `json:"reason"`
}

// StatusLine is GET /agents/{target}/statusline: what `agent-worker
// statusline` shows in Claude Code's status line, from two indexed reads.
type StatusLine struct {
	Agent string `json:"agent"`
	// Effort is the active effort's id, "" when the agent has none; then
	// the fields up to Unread are zero.
	Effort  string `json:"effort,omitempty"`
	Skill   string `json:"skill,omitempty"`
	Ordinal int    `json:"ordinal,omitempty"`
	// Phase counts the phases from 1; PhaseName names it.
	Phase     int    `json:"phase,omitempty"`
	PhaseName string `json:"phase_name,omitempty"`
	Unread    int    `json:"unread"`
}

// Text is the status line: [implement:P2], with the effort's ordinal in
// its directory when above 1 ([2:implement:P3]), and the unread messages
// when there are some; the agent's name when it has no effort.
func (s StatusLine) Text() string {
	var b strings.Builder
	switch {
	case s.Effort == "":
		b.WriteString(s.Agent)
	case s.Ordinal > 1:
		fmt.Fprintf(&b, "[%d:%s:P%d]", s.Ordinal, s.Skill, s.Phase)
	default:
		fmt.Fprintf(&b, "[%s:P%d]", s.Skill, s.Phase)
	}
	if s.Unread > 0 {
		fmt.Fprintf(&b, " %d unread", s.Unread)
	}
	return b.String()
}

// StatusLine is GET /agents/{target}/statusline.
func (c *Client) StatusLine(ctx context.Context, t Target) (StatusLine, error) {
	var s StatusLine
	return s, c.do(ctx, http.MethodGet, "/agents/"+url.PathEscape(t.String())+"/statusline", nil, &s)
}
