// Package pluginv1 is the generated code of plugin protocol v1
// (proto/agentworker/plugin/v1/plugin.proto). Only the sdk's gRPC adapters
// use it: plugin authors and the daemon work with the hand-written types of
// sdk/backend, sdk/docprovider and sdk/plugin, so the wire can evolve
// without breaking them. Regenerate with `make proto`; never edit the
// *.pb.go files.
package pluginv1
