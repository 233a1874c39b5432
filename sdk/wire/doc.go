// Package wire converts between the Go types of the plugin SDK
// (sdk/backend, sdk/docprovider) and the messages of plugin protocol v1
// (sdk/wire/pluginv1), in both directions, in the manner of
// terraform-plugin-go's toproto/fromproto. Both sides of the plugin
// boundary use it: the SDK's server glue in a plugin process
// (sdk/internal/grpcplugin, behind plugin.Serve) and the protocol's client
// (its subpackage client, which the daemon and the SDK's test kits both
// call plugins with), so there is one copy of every conversion. The
// gRPC-status mapping of sdk errors is its subpackage grpcerr.
//
// Plugin authors never import it: they write against sdk/backend,
// sdk/docprovider and sdk/plugin, and plugin.Serve does the rest.
//
// Every conversion accepts nil and zero values; the tests check that nil,
// zero and full values round trip.
package wire
