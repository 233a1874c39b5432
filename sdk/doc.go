// Package sdk is the only package a plugin author imports. It defines the
// handshake every agent-worker plugin shares with the daemon; later
// additions bring the backend and docs-provider interfaces, Serve, the
// host-side clients and the conformance suites.
//
// It must never import the daemon's own packages (host, store, workflow): a
// third-party plugin built in its own module against sdk alone has to work
// when dropped into plugins.d/. A test in this package enforces that.
package sdk
