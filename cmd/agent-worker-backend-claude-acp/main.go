// Command agent-worker-backend-claude-acp is the acp backend's claude-acp
// preset as a plugin binary for plugins.d/: agents that run Claude Code
// through Zed's ACP adapter (claude-agent-acp), its command the default of
// config command (see plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: clis.ClaudeACP.Backend, Version: acp.Version},
		Backend: acp.NewPreset(clis.ClaudeACP),
		Status:  acp.PresetStatus(clis.ClaudeACP),
	})
}
