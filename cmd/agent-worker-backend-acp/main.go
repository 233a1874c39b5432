// Command agent-worker-backend-acp is the Agent Client Protocol backend as
// a plugin binary for plugins.d/: agents whose config names a command that
// speaks ACP over stdio (see plugins/acp).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "acp", Version: acp.Version},
		Backend: acp.New(),
	})
}
