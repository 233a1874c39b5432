// Package api is the contract between the agent-worker daemon and its clients:
// the JSON types of the HTTP API, the error codes and states of host/contract
// (a leaf the store speaks too) under the same names, target parsing, daemon discovery through
// daemon.json, and a typed HTTP client.
//
// The CLI imports this package and nothing else of the daemon, so everything
// a client needs to talk to a running daemon lives here and nothing that
// needs the daemon's internals does.
package api
