// Package catalog is the catalog of plugin binaries: found in the plugins
// directories (agent-worker-<kind>-<name>), each examined concurrently
// within a deadline (its handshake and Info, on a verified copy the
// daemon made and executes, never the file in plugins.d), watched for
// changes and examined again (hot reload). It also holds what every start
// of a plugin process shares: the command and its environment allowlist,
// the private socket directories and the process-group kill.
//
// It may import host/api, host/internal/fswatch and sdk/plugin; the run
// supervisor and the document providers start
// their processes from it.
package catalog
