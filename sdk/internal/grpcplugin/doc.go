// Package grpcplugin is the SDK's go-plugin/gRPC glue, internal to the
// SDK: the plugin's halves of the backend and document-provider services
// (the servers plugin.Serve registers), and the GRPCClient halves that
// plugintest dispenses, which hand the connection to the protocol's one
// client (sdk/wire/client), the one the daemon's glue (host/pluginclient)
// uses too. The servers convert with package sdk/wire and map errors with
// sdk/wire/grpcerr, as the client does, so what crosses the wire is the
// same on both sides.
package grpcplugin
