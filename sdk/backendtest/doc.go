// Package backendtest is for backend authors, first-party or third-party:
// a fake agent-worker daemon (NewDaemon) that speaks the daemon's MCP tools
// in memory, and a conformance suite (Run) of what the daemon relies on
// from every backend: a run over an inbox ends cleanly with a result or a
// message, cancellation stops it, a dead event stream stops it, and an
// unreachable daemon is an error rather than a hang. In the manner of
// containerd's snapshots/testsuite, a backend's own tests call
//
//	backendtest.Run(t, func(t *testing.T) backend.Backend { return mybackend.New() })
//
// The fake daemon never imports the daemon's packages, so a plugin built in
// its own module against sdk alone can use it.
package backendtest
