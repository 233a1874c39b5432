// Command agent-worker-backend-echo is a third-party backend built in its
// own module against the agent-worker sdk only: it answers each inbox
// message by echoing it into the channel. Build it and drop the binary into
// a plugins.d folder:
//
//	go build -o ~/.agent-worker/plugins.d/agent-worker-backend-echo .
package main

import (
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "echo", Version: "1.0.0"}, Backend: echo{}})
}
