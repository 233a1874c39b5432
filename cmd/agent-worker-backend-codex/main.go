// Command agent-worker-backend-codex is the Codex CLI backend as a plugin
// binary for plugins.d/ (see plugins/codex).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/codex"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:   plugin.Info{Name: "codex", Version: codex.Version},
		Status: codex.Status, Backend: codex.New(),
	})
}
