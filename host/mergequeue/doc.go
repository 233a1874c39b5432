// Package mergequeue is the merge queue of a git workspace with checks:
// an integrate there is queued instead of merged at once; RunQueue takes
// a batch of a queue at a time, merges it onto the base in the object
// store, runs the checks on the result in a scratch worktree (confined and
// contained like runs), bisects a failing batch to name its culprit, and
// lands what passed, recording the landing so that a daemon that dies
// half-way settles it on its next start.
//
// The store keeps the entries and their states; host/worktrees does the
// git work (locks, merges, moving a base) and hands integrates here
// through the one interface it is given (worktrees.Queue). It may import
// host/worktrees, the store, host/api and the sdk's sandbox and tools
// types; never host/ itself, the scheduler or the HTTP layer.
package mergequeue
