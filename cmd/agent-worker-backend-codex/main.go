// Command agent-worker-backend-codex is the Codex CLI backend as a plugin
// binary for plugins.d/ (see plugins/codex). Run as
// `agent-worker-backend-codex gate-hook GATEFILE`, it answers one of
// Codex's PreToolUse hooks with the daemon's gate instead
// (codex.GateHook).
package main

import (
	"context"
	"os"

	"github.com/agent-worker/agent-worker/plugins/codex"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == codex.GateHookArg {
		os.Exit(codex.GateHook(context.Background(), os.Args[2:], os.Stdin, os.Stdout))
	}
	plugin.Serve(plugin.Config{
		Info:   plugin.Info{Name: "codex", Version: codex.Version},
		Status: codex.Status, Backend: codex.New(),
	})
}
