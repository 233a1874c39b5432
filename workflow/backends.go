package workflow

import "strings"

// Backends are the first-party backends, in the order help texts list
// them. gemini, claude-acp, codex-acp and opencode are the acp backend's
// presets (plugins/clis.ACPPresets). "external" is a member the daemon never runs: an outside MCP
// client acts as it.
var Backends = []string{"sdk", "claude", "codex", "cursor", "acp", "gemini", "claude-acp", "codex-acp", "opencode", "mock", External}

// External is the backend of a member the daemon never runs.
const External = "external"

// backendAliases maps the words users may write to the backend they mean.
var backendAliases = map[string]string{"": "sdk", "default": "sdk"}

// BackendName is the backend a user's word means, in a workflow file, on
// `new --backend` and in POST /agents alike: lower case, aliases resolved.
// Whether that backend is installed is the daemon's question
// (host/agents.ResolveBackend).
func BackendName(word string) string {
	b := strings.ToLower(strings.TrimSpace(word))
	if alias, ok := backendAliases[b]; ok {
		return alias
	}
	return b
}
