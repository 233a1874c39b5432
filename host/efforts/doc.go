// Package efforts is the daemon's procedures service (issue 43): the
// skills registry, continue tokens, and the walk of an effort (a skill
// applied to a work directory by one agent) through its phases, for the
// MCP effort_* tools, the HTTP routes behind `agent-worker effort` and
// `efforts`, and the starting context of a run.
//
// The store keeps the facts and applies the rules that need its data
// (one active effort per agent, ordinals, the compare-and-swap of a
// phase); this package decides what a skill means: proof typed with
// workflow/skill, evidence matched against what the daemon observed
// (host/gate writes the observations), artifacts named by ordinal, a
// token signed with a key kept in the store so every member of a cluster
// accepts every member's tokens.
package efforts
