// Command agent-worker-backend-mock is the mock backend as a plugin binary
// for plugins.d/: scripted agents for tests and demos (see plugins/mock).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/mock"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: "mock", Version: mock.Version},
		Backend: mock.New(),
	})
}
