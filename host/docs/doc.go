// Package docs is the document providers a workflow names: the built-in
// file and sqlite ones in-process, an installed docs plugin (started from
// the catalog, restarted with backoff when it crashes) out of process, and
// in a cluster the postgres plugin on the shared database. Whatever a
// provider returns is turned into the daemon's error codes here
// (errors.go), before it reaches the team service.
//
// It may import host/catalog (the plugin binaries), host/api, the store,
// host/internal/backoff, the built-in providers and the sdk; never host/
// itself, the scheduler or the HTTP layer. The team service reaches it
// through the one func it is given (DocProviders.Resolve).
package docs
