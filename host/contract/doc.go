// Package contract is the daemon's vocabulary at its smallest: the error
// codes (with what each means to HTTP and to a shell script), the error
// type every surface speaks, and the states of agents, runs, workflows and
// tasks. It imports the standard library only, so that the store, which
// speaks it, and host/api, which carries it over HTTP, depend on a leaf:
// TestContractIsALeaf fails when it grows an import.
package contract
