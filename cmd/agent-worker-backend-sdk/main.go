// Command agent-worker-backend-sdk is the sdk backend as a plugin binary
// for plugins.d/: agents that call model APIs directly (see plugins/direct).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/direct"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "sdk", Version: direct.Version},
		Backend: direct.New(direct.Options{}),
	})
}
