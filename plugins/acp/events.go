package acp

import (
	"encoding/json"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agent-worker/agent-worker/internal/claudehook"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// kindTools are the names the daemon's gate knows for ACP's tool kinds:
// a phase that denies edit_file or shell: commands refuses an ACP agent's
// edits and commands as it does the sdk backend's.
var kindTools = map[acpsdk.ToolKind]string{
	acpsdk.ToolKindRead:    "read_file",
	acpsdk.ToolKindEdit:    "edit_file",
	acpsdk.ToolKindDelete:  "edit_file",
	acpsdk.ToolKindMove:    "edit_file",
	acpsdk.ToolKindSearch:  "search_files",
	acpsdk.ToolKindExecute: "shell",
	acpsdk.ToolKindFetch:   "fetch",
}

// toolName is a tool call's name in the run's events: the agent's title,
// else the gate's name for its kind.
func toolName(title string, kind *acpsdk.ToolKind) string {
	if title != "" {
		return title
	}
	if kind != nil {
		if n, ok := kindTools[*kind]; ok {
			return n
		}
		return string(*kind)
	}
	return "tool"
}

// gateCall is a permission request's tool call as the daemon's gate reads
// it: the gate's name for its kind (the title for other kinds), the
// command of an execute call and the first path it touches.
func gateCall(tc acpsdk.ToolCallUpdate) tools.GateCall {
	raw := rawJSON(tc.RawInput)
	call := tools.GateCall{Tool: daemonTool(deref(tc.Title, "tool"))}
	if tc.Kind != nil {
		if n, ok := kindTools[*tc.Kind]; ok {
			call.Tool = n
		}
	}
	if call.Tool == "shell" {
		call.Command = claudehook.Field(raw, "command", "cmd")
		if call.Command == "" {
			call.Command = commandLine(raw)
		}
	}
	if len(tc.Locations) > 0 {
		call.Path = tc.Locations[0].Path
	} else {
		call.Path = claudehook.Field(raw, "file_path", "path", "absolute_path", "filePath")
	}
	return call
}

// daemonTool is the name of one of the daemon's own MCP tools as an agent
// titles a call of it (Claude Code mcp__agent-worker__channel_send, Codex
// mcp__agent_worker__…, Gemini CLI mcp_agent-worker_… or "channel_send
// (agent-worker MCP Server)"): the tool's own name, as the gate knows
// it; any other title as it is.
func daemonTool(title string) string {
	for _, prefix := range []string{"mcp__" + daemonServer + "__", "mcp__agent_worker__", "mcp_" + daemonServer + "_"} {
		if t, ok := strings.CutPrefix(title, prefix); ok && t != "" {
			return t
		}
	}
	if t, ok := strings.CutSuffix(title, " ("+daemonServer+" MCP Server)"); ok && t != "" {
		return t
	}
	return title
}

// commandLine is a command given as an argument list ({"command":
// ["git", "push"]}) joined by spaces; "" when there is none.
func commandLine(raw json.RawMessage) string {
	var in struct {
		Command []string `json:"command"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	return strings.Join(in.Command, " ")
}

// option is the first of the agent's options of the kinds, in order of
// kinds.
func option(opts []acpsdk.PermissionOption, kinds ...acpsdk.PermissionOptionKind) (acpsdk.PermissionOption, bool) {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return o, true
			}
		}
	}
	return acpsdk.PermissionOption{}, false
}

func selected(o acpsdk.PermissionOption) acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
}

func cancelledOutcome() acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
}

// contentText is the text of a tool call's content blocks, one a line;
// a diff is named by its path.
func contentText(content []acpsdk.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Content != nil && c.Content.Content.Text != nil:
			parts = append(parts, c.Content.Content.Text.Text)
		case c.Diff != nil:
			parts = append(parts, "diff of "+c.Diff.Path)
		}
	}
	return strings.Join(parts, "\n")
}

// rawJSON is a decoded JSON value encoded again; nil for none.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// lines is the part of text that fs/read_text_file asks for: from line
// (1-based) at most limit lines; nil for either means from the start, or
// to the end.
func lines(text string, line, limit *int) string {
	if line == nil && limit == nil {
		return text
	}
	ls := strings.SplitAfter(text, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = min(*line-1, len(ls))
	}
	end := len(ls)
	if limit != nil && *limit >= 0 {
		end = min(start+*limit, len(ls))
	}
	return strings.Join(ls[start:end], "")
}
