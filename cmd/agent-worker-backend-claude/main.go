// Command agent-worker-backend-claude is the Claude Code backend as a
// plugin binary for plugins.d/: agents that run `claude -p` (see
// plugins/claude). Run as `agent-worker-backend-claude gate-hook
// MCPCONFIG`, it answers one of Claude Code's PreToolUse hooks with the
// daemon's gate instead (claude.GateHook).
package main

import (
	"context"
	"os"

	"github.com/agent-worker/agent-worker/plugins/claude"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == claude.GateHookArg {
		os.Exit(claude.GateHook(context.Background(), os.Args[2:], os.Stdin, os.Stdout))
	}
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "claude", Version: claude.Version},
		Backend: claude.New(),
		Status:  claude.Status,
	})
}
