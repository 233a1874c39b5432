// Command echo is a minimal backend whose version comes from -ldflags, so a
// test can build two different binaries of the same plugin.
package main

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "1.0.0"

func main() {
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "echo", Version: version},
		Backend: backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
			return ev.Send(backend.Event{Kind: backend.EventResult, Text: "echo " + version + " for " + req.Agent.Name})
		})})
}
