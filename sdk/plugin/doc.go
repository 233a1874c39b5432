// Package plugin turns a Backend or a docs Provider into an agent-worker
// plugin binary. A plugin's main is one call:
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
// the daemon re-emits with the run id. The protocol's constants
// (Handshake, ProtocolVersion, the plugin set's names) are here because
// both sides must agree on them; the daemon's start of a plugin is not (it
// is host/pluginclient, in the daemon's module), and the gRPC glue is
// internal to the SDK.
package plugin
