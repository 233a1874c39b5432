// Command agent-worker-backend-opencode is the acp backend's opencode
// preset as a plugin binary for plugins.d/: agents that run OpenCode in
// ACP mode (opencode acp), its command the default of config command (see
// plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: clis.OpenCode.Backend, Version: acp.Version},
		Backend: acp.NewPreset(clis.OpenCode),
		Status:  acp.PresetStatus(clis.OpenCode),
	})
}
