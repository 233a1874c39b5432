// Package pluginclient is the daemon's side of the plugin protocol: how it
// starts a plugin binary as a go-plugin client (ClientConfig, hardened),
// dispenses the info, backend and docs services of a started plugin
// (DispenseInfo, DispenseBackend, DispenseDocs), and checks that a plugin
// still serves (Ping). Its clients speak the public protocol of the SDK's
// module (sdk/wire/pluginv1), convert with sdk/wire and map errors with
// sdk/wire/grpcerr, the same packages plugin.Serve's servers use, so a
// plugin's error keeps its class, text and Permanent mark.
//
// It is host-side only: a plugin author's code never imports it, and the
// SDK exports nothing of it. host/catalog, host/runner and host/docs use
// it.
package pluginclient
