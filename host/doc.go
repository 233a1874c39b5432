// Package host is the daemon's wiring and nothing else: New takes the
// home's lock, opens the store and builds the parts in order, each with
// its own logger; Run starts their loops and serves the HTTP API; Close
// releases what New took. The `agent-worker daemon` command and the
// daemon-level tests drive it the same way.
//
// The parts, each in its own package with a doc.go of what it owns:
// host/catalog (the plugin binaries), host/runner (the run supervisor
// and warm spares), host/docs (the document providers), host/scheduler
// (when agents run, settling runs, ask), host/agents (registration and
// the backend resolver), host/workflows (workflow instances and hot
// reload), host/team (the channel, inboxes, documents, proposals and the
// event bus), host/triggers (webhook deliveries: signature, dedupe,
// message), host/worktrees (each agent's git worktree: made, merged,
// discarded, tidied), host/mergequeue (the merge queue of a workspace
// with checks), host/mcpserver (the agents' MCP tools), host/httpapi (the
// routes) and host/api (the wire types, errors and client). Parts receive
// what they need as small interfaces at construction; none imports this
// package, and only this package imports host/httpapi
// (internal/archtest/imports_test.go enforces the layering).
package host
