// Command agent-worker-backend-sdk is the sdk backend as a plugin binary
// for plugins.d/: agents that call model APIs directly (see plugins/sdk).
package main

import (
	sdkbackend "github.com/agent-worker/agent-worker/plugins/sdk"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "sdk", Version: sdkbackend.Version},
		Backend: sdkbackend.New(sdkbackend.Options{}),
	})
}
