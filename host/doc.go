// Package host is the agent-worker kernel: the daemon that owns the store
// and serves the HTTP API. Start it with New, Run and Close; the
// `agent-worker daemon` command and the tests drive it the same way.
//
// New takes the home's lock, opens the store and builds the parts, each
// with its own hclog logger named after it: the plugin catalog and its
// plugins.d watcher (catalog.go), the document providers (docs.go,
// docsplugin.go), the team context service (host/team), the MCP server
// (host/mcpserver), the process supervisor (supervisor.go), the scheduler
// (scheduler.go) and the workflow instances with their file watcher
// (workflows.go). Run starts the background loops and serves the routes of
// http.go, handlers.go and team_handlers.go; Close releases the store, the
// document providers and the lock. The types of the wire, its errors and the
// client live in host/api.
package host
