// Package contract is the daemon's vocabulary at its smallest: the error
// codes (with what each means to HTTP and to a shell script), the error
// type every surface speaks, the states of agents, runs, workflows and
// tasks, and the request, response and event types of the HTTP API whose
// fields are the standard library's. It imports the standard library
// only, so that the store, which speaks it, and host/api, which carries
// it over HTTP, depend on a leaf: TestContractIsALeaf fails when it grows
// an import, and testdata/wire.golden holds the JSON of every type.
//
// The wire types that hold the SDK's own types are not here: an agent
// with its backend.AgentConfig, and the messages, tasks, proposals,
// questions, worktrees and merge queue entries that agents get from
// their tools (sdk/tools) and users from the API as the same values.
// Mirroring them here would need a second copy of each, converted by
// hand wherever a value crosses (the nested ones, Proposal with its
// votes or Worktree with its changes, allow no plain Go conversion), so
// host/api composes them with this package's types instead: it is the
// one place where the contract meets the SDK.
package contract
