// Command agent-worker-backend-codex-acp is the acp backend's codex-acp
// preset as a plugin binary for plugins.d/: agents that run Codex through
// Zed's ACP adapter (codex-acp), its command the default of config command
// (see plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: clis.CodexACP.Backend, Version: acp.Version},
		Backend: acp.NewPreset(clis.CodexACP),
		Status:  acp.PresetStatus(clis.CodexACP),
	})
}
