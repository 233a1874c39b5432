// Package api is the contract between the agent-worker daemon and its clients:
// the JSON types of the HTTP API, the one table that maps error codes to HTTP
// statuses and CLI exit codes, target parsing, daemon discovery through
// daemon.json, and a typed HTTP client.
//
// The CLI imports this package and nothing else of the daemon, so everything
// a client needs to talk to a running daemon lives here and nothing that
// needs the daemon's internals does.
package api
