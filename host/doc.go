// Package host is the agent-worker kernel: the daemon that owns the store and
// serves the HTTP API. Start it with New, Run and Close; the `agent-worker
// daemon` command and the tests drive it the same way.
//
// Later parts (scheduler, supervisor, plugin catalog, team context, MCP
// server, workflow watcher) hang off Host as named subsystems with their own
// hclog logger.
package host
