package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// The Claude Code hook events `agent-worker hook` answers, by Claude's
// own names (they are what `hooks install` writes into the settings).
const (
	HookSessionStart     = "SessionStart"
	HookUserPromptSubmit = "UserPromptSubmit"
	HookPostToolUse      = "PostToolUse"
	HookStop             = "Stop"
	HookSessionEnd       = "SessionEnd"
)

// HookEvents lists the hook events, in the order of a session's life.
var HookEvents = []string{HookSessionStart, HookUserPromptSubmit, HookPostToolUse, HookStop, HookSessionEnd}

// ValidHookEvent reports whether event is one of HookEvents.
func ValidHookEvent(event string) bool { return slices.Contains(HookEvents, event) }

// HookCall is the body of POST /agents/{target}/hook: the part of a
// Claude Code hook's input the daemon needs to act for the session.
type HookCall struct {
	Event     string `json:"event"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd,omitempty"`
	// StopHookActive: Claude is already continuing because a Stop hook
	// blocked, so this Stop must let it end.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
}

// HookDelivery is the answer to a HookCall: raw data, from which the hook
// command writes Claude's context (the daemon builds no prompt).
type HookDelivery struct {
	// Agent is the agent the session acts as (its display target).
	Agent    string `json:"agent"`
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	// System is the agent's system prompt and Members its team (SessionStart
	// only).
	System  string   `json:"system,omitempty"`
	Members []Member `json:"members,omitempty"`
	// Messages are the unread messages handed over now, oldest first; they
	// are marked read. Omitted counts older unread ones left out (read
	// too).
	Messages []Message `json:"messages,omitempty"`
	Omitted  int       `json:"omitted,omitempty"`
	// Block (Stop only): messages wait, so Claude should answer them
	// before it stops.
	Block bool `json:"block,omitempty"`
}

// AttachedSession is the Claude Code session acting as an agent through
// its hooks, on the agent's view (its state then shows AgentAttached).
type AttachedSession struct {
	ID          string    `json:"id"`
	Cwd         string    `json:"cwd,omitempty"`
	AttachedAt  time.Time `json:"attached_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// Hook is POST /agents/{target}/hook: what `agent-worker hook` calls for
// each Claude Code hook.
func (c *Client) Hook(ctx context.Context, t Target, call HookCall) (HookDelivery, error) {
	var d HookDelivery
	return d, c.do(ctx, http.MethodPost, "/agents/"+url.PathEscape(t.String())+"/hook", call, &d)
}
