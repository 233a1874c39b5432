// Package pluginclient is the daemon's side of the plugin protocol: how it
// starts a plugin binary as a go-plugin client (ClientConfig, hardened),
// dispenses the info, backend and docs services of a started plugin
// (DispenseInfo, DispenseBackend, DispenseDocs), and checks that a plugin
// still serves (Ping). The backend and docs it dispenses are the
// protocol's one client (sdk/wire/client), the same the SDK's test kits
// call plugins with; they convert with sdk/wire and map errors with
// sdk/wire/grpcerr, as plugin.Serve's servers do, so a plugin's error
// keeps its class, text and Permanent mark.
//
// It is host-side only: a plugin author's code never imports it, and the
// SDK exports nothing of it. host/catalog, host/runner and host/docs use
// it.
package pluginclient
