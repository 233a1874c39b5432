// Package pluginv1 is the generated code of plugin protocol v1
// (proto/agentworker/plugin/v1/plugin.proto): the messages and gRPC
// services both sides of the plugin boundary speak. It is public so that
// the protocol's client (sdk/wire/client, which the daemon's
// host/pluginclient dispenses) and the SDK's server glue share one copy;
// plugin authors never import it: they work with the hand-written types of
// sdk/backend, sdk/docprovider and sdk/plugin, so the wire can evolve
// without breaking them. Package wire
// converts between the two. Regenerate with `make proto`; never edit the
// *.pb.go files.
package pluginv1
