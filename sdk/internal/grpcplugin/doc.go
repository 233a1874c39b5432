// Package grpcplugin is the SDK's go-plugin/gRPC glue, internal to the
// SDK: the plugin's halves of the backend and document-provider services
// (the servers plugin.Serve registers), and the small clients that
// plugintest uses to call a plugin over the real wire in a test. The
// daemon's own client is host/pluginclient, in the daemon's module; both
// convert with package sdk/wire and map errors with sdk/wire/grpcerr, so
// what crosses the wire is the same on both sides.
package grpcplugin
