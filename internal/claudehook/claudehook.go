// Package claudehook is Claude Code's PreToolUse hook in the daemon's
// terms, shared by the two paths that gate Claude Code's tool calls: the
// claude backend's gate hook for daemon runs (plugins/claude) and
// `agent-worker hook PreToolUse` for a person's own session acting as an
// external agent (cmd/agent-worker). Both turn the hook's input into the
// same gate calls, so the daemon's one decision (host/gate.Decide) sees
// a live session's Edit exactly as it sees a run's. It imports only the
// SDK's gate call type, so a plugin binary may use it.
package claudehook

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// Input is the part of a PreToolUse hook's input (JSON on stdin) the gate
// reads; Codex sends the same fields.
type Input struct {
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	Cwd       string          `json:"cwd"`
}

// Calls is Claude Code's call in, the daemon's gate calls out: the tool as
// Claude Code names it, Bash's command line, the absolute path of a file
// tool (file_path, notebook_path, path made absolute against the
// session's cwd). A tool of the MCP server named daemonServer gives none:
// the daemon decides its own tools when they are called.
func Calls(in Input, daemonServer string) []tools.GateCall {
	if daemonServer != "" && strings.HasPrefix(in.ToolName, "mcp__"+daemonServer+"__") {
		return nil
	}
	call := tools.GateCall{Tool: in.ToolName}
	if in.ToolName == "Bash" { // Claude Code's shell
		call.Command = Field(in.ToolInput, "command")
	}
	call.Path = Abs(Field(in.ToolInput, "file_path", "notebook_path", "path"), in.Cwd)
	return []tools.GateCall{call}
}

// Abs is path made absolute against the call's cwd; "" stays "".
func Abs(path, cwd string) string {
	if path != "" && !filepath.IsAbs(path) && cwd != "" {
		return filepath.Join(cwd, path)
	}
	return path
}

// Field is the first of keys that the tool's input holds as a non-empty
// string.
func Field(input json.RawMessage, keys ...string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range keys {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// Deny is Claude Code's documented PreToolUse answer that denies a call:
// the reason is what the model reads as the tool's result. Mark tells the
// daemon's refusals apart from those of a user's own hooks on Claude
// Code's stream (Codex takes no key it does not know, so it is optional).
type Deny struct {
	Mark     bool `json:"agent_worker_gate,omitempty"`
	Specific struct {
		Event    string `json:"hookEventName"`
		Decision string `json:"permissionDecision"`
		Reason   string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// NewDeny is the answer that denies a call for reason.
func NewDeny(reason string, mark bool) Deny {
	var d Deny
	d.Mark = mark
	d.Specific.Event = "PreToolUse"
	d.Specific.Decision = "deny"
	d.Specific.Reason = reason
	return d
}
