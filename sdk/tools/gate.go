package tools

// GatePath is the gate endpoint, beside the daemon's MCP endpoint: a
// plugin POSTs a GateCall to the MCP URL plus GatePath (…/mcp/gate) with
// the run's bearer token, and the daemon answers a GateDecision for the
// token's agent. It is no MCP tool, so a model never sees it in its tool
// list (issue 43: gates are one decision, the daemon's).
const GatePath = "/gate"

// GateCall is a tool call a plugin asks the daemon's gate about before
// it makes it.
type GateCall struct {
	// Tool is the tool's name as the backend offers it (run_shell,
	// write_file, shell, write).
	Tool string `json:"tool"`
	// Command is a shell tool's command line.
	Command string `json:"command,omitempty"`
	// Path is a file tool's file: absolute, or relative to the effort's
	// directory. The plugin resolves a relative path in its workspace
	// first, so it sends absolute ones.
	Path string `json:"path,omitempty"`
}

// GateDecision is the gate's answer.
type GateDecision struct {
	Allowed bool `json:"allowed"`
	// Reason says why a call was refused, in words a model can act on:
	// the plugin returns it as the tool's error result.
	Reason string `json:"reason,omitempty"`
}
