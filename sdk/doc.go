// Package sdk is the root of what a plugin author imports: the error classes
// that survive the plugin boundary (errors.Is works on the daemon's side).
// The rest lives in subpackages: plugin (Serve, Info and the handshake),
// backend and docprovider (the interfaces), worker (talking to the daemon's
// MCP server, building prompts), and the conformance suites backendtest and
// docprovidertest.
//
// It must never import the daemon's own packages (host, store, workflow): a
// third-party plugin built in its own module against sdk alone has to work
// when dropped into plugins.d/. A test in this package enforces that.
package sdk
