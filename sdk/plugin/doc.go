// Package plugin turns a Backend or a docs Provider into an agent-worker
// plugin binary, and gives the daemon the matching clients. A plugin's main
// is one call:
//
//	func main() {
//		plugin.Serve(plugin.Config{
//			Info:    plugin.Info{Name: "echo", Version: "1.0.0"},
//			Backend: backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
//				return ev.Send(backend.Event{Kind: backend.EventResult, Text: "hello from " + req.Agent.Name})
//			}),
//		})
//	}
//
// Build it as agent-worker-backend-<name> and drop it into plugins.d/.
// Plugins speak protocol v1 (proto package agentworker.plugin.v1) over
// go-plugin's gRPC transport; they log to stderr with hclog (JSON), which
// the daemon re-emits with the run id.
package plugin
