package contract

import (
	"encoding/json"
	"slices"
	"time"
)

// The Claude Code hook events `agent-worker hook` answers, by Claude's
// own names (they are what `hooks install` writes into the settings).
const (
	HookSessionStart     = "SessionStart"
	HookUserPromptSubmit = "UserPromptSubmit"
	HookPostToolUse      = "PostToolUse"
	HookPreCompact       = "PreCompact"
	HookStop             = "Stop"
	HookSessionEnd       = "SessionEnd"
)

// HookEvents lists the hook events, in the order of a session's life.
var HookEvents = []string{HookSessionStart, HookUserPromptSubmit, HookPostToolUse, HookPreCompact, HookStop, HookSessionEnd}

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
	// Source is how a SessionStart began: startup, resume, clear or
	// compact.
	Source string `json:"source,omitempty"`
	// Prompt is the person's prompt (UserPromptSubmit).
	Prompt string `json:"prompt,omitempty"`
	// ToolName, ToolInput and ToolResult are the tool call a PostToolUse
	// reports (the result as text, cut by the hook command); a relative
	// path in ToolInput is resolved against Cwd.
	ToolName   string          `json:"tool_name,omitempty"`
	ToolInput  json.RawMessage `json:"tool_input,omitempty"`
	ToolResult string          `json:"tool_result,omitempty"`
	// ContextTokens is the context the session uses, from the usage of
	// its transcript's last model answer (0: unknown).
	ContextTokens int64 `json:"context_tokens,omitempty"`
	// LastAssistant is the model's last text in the session (what it said
	// it would do next), read from its transcript for PreCompact.
	LastAssistant string `json:"last_assistant,omitempty"`
}

// AttachedSession is the Claude Code session acting as an agent through
// its hooks, on the agent's view (its state then shows AgentAttached).
type AttachedSession struct {
	ID          string    `json:"id"`
	Cwd         string    `json:"cwd,omitempty"`
	AttachedAt  time.Time `json:"attached_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Stale: the session has called no hook for five minutes
	// (team.StaleAfter); its agent shows idle, and status lists it as a
	// problem.
	Stale bool `json:"stale,omitempty"`
}
