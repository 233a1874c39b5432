// Command agent-worker-backend-claude is the Claude Code backend as a
// plugin binary for plugins.d/: agents that run `claude -p` (see
// plugins/claude).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/claude"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "claude", Version: claude.Version},
		Backend: claude.New(),
		Status:  claude.Status,
	})
}
