package plugin_test

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// The whole main of a backend plugin, as the package documentation shows
// it; compiling it here keeps that documentation true. (It has no Output
// line, so go test does not run it: Serve would wait for a daemon.)
func Example() {
	plugin.Serve(plugin.Config{
		Info: plugin.Info{Name: "echo", Version: "1.0.0"},
		Backend: backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
			return ev.Send(backend.Event{Kind: backend.EventResult, Text: "hello from " + req.Agent.Name})
		}),
	})
}
