// Package client is the calling side of the plugin protocol: the Backend
// and the docs Provider that run over a gRPC connection to a plugin, in
// the sdk's own types (sdk/backend, sdk/docprovider). It is the one copy
// of them: the daemon's go-plugin glue (host/pluginclient) and the SDK's
// in-process test hosts (sdk/plugin/plugintest through
// sdk/internal/grpcplugin) both hand it the connection go-plugin gives
// their GRPCClient, so what a test sees of a plugin is what the daemon
// sees. It converts with package wire and maps errors with wire/grpcerr,
// as the plugin's servers do, so a plugin's error keeps its class, text
// and Permanent mark.
//
// Plugin authors never import it: they call their plugin through
// plugintest, backendtest or docprovidertest.
package client
