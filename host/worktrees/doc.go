// Package worktrees gives each agent of a workflow with
// workspace: {git: worktree} a git worktree of its own, and lets the user
// and the workflow's planners (can_spawn) merge that work back.
//
// Worktrees live under the daemon's home,
// $AGENT_WORKER_HOME/worktrees/<workflow>/<tag>/<agent>, never inside the
// user's working tree, on branch aw/<workflow>/<tag>/<agent> cut from the
// workspace's base branch before the agent's first run (the supervisor
// asks ProjectDir for the run's working directory). Git is the record:
// the store keeps only the repository and the base on the workflow's row,
// and a worktree is found again after a restart by its path and branch.
//
// Integrate merges with git's plumbing (merge-tree, commit-tree,
// update-ref), so no working tree is touched to make the merge; when the
// target branch is checked out somewhere (the user's own checkout, most
// often), that tree is fast-forwarded with `git merge --ff-only` only if it
// has no uncommitted changes to tracked files, and the integrate is refused
// otherwise. A conflict changes nothing and lists the files.
//
// Worktrees of agents that stop, or of a workflow that stops, are removed
// with their branch, unless the branch holds commits not merged into the
// base or the worktree uncommitted changes: those are kept, listed as
// kept, for the user to integrate or discard.
//
// With workspace checks:, Integrate hands the branch to the merge queue
// instead (host/mergequeue, given with UseQueue), which merges batches of
// queued branches onto the base the same way, through this package's git
// helpers and repository locks (export.go).
//
// Every git command runs as `git -C <dir> <args>`, without a shell, and
// its errors carry git's own stderr. Only host/ wires this package; it is
// handed to the supervisor, the workflow manager, the registry, the MCP
// server and the HTTP API through interfaces they declare.
package worktrees
