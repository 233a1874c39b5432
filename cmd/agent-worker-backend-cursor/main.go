// Command agent-worker-backend-cursor is the Cursor CLI backend as a
// plugin binary for plugins.d/: each run drives a headless cursor-agent
// (see plugins/cursor).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/cursor"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Info:   plugin.Info{Name: "cursor", Version: cursor.Version},
		Status: cursor.Status, Backend: cursor.New(),
	})
}
