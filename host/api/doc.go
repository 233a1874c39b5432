// Package api is the contract between the agent-worker daemon and its clients
// as a client uses it: the wire types (host/contract's, under the same
// names where many places use them, and the ones that hold the SDK's
// shared types, which only this package composes), the error codes and
// states of host/contract (a leaf the store speaks too), target parsing,
// daemon discovery through daemon.json, and a typed HTTP client.
//
// The CLI imports this package, and host/contract for the few wire types
// it names there, and nothing else of the daemon, so everything a client
// needs to talk to a running daemon lives here and nothing that needs the
// daemon's internals does.
package api
