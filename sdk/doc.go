// Package sdk is the root of what a plugin author imports: the error classes
// that survive the plugin boundary (errors.Is works on the daemon's side).
// The rest lives in subpackages: plugin (Serve, Info and the handshake),
// backend and docprovider (the interfaces), worker (talking to the daemon's
// MCP server, building prompts), and the conformance suites backendtest and
// docprovidertest.
//
// It must never import the daemon's own packages (host, store, workflow): a
// third-party plugin built in its own module against sdk alone has to work
// when dropped into plugins.d/. sdk/ is a Go module of its own
// (github.com/agent-worker/agent-worker/sdk), so a plugin's module requires
// none of the daemon's dependencies; deps_test.go lists the third-party
// modules the SDK may reach and thirdparty_test.go builds a 25-line plugin
// in a module of its own.
package sdk
