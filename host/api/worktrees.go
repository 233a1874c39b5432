package api

import "github.com/agent-worker/agent-worker/sdk/tools"

// Worktree is an agent's git worktree in GET /worktrees, the same shape
// the worktree_status tool gives agents.
type Worktree = tools.Worktree

// WorktreeState says whether a worktree is in use, not made yet, or kept
// after its agent stopped.
type WorktreeState = tools.WorktreeState

// The worktree states (see tools.WorktreeState).
const (
	WorktreeActive = tools.WorktreeActive
	WorktreeNone   = tools.WorktreeNone
	WorktreeKept   = tools.WorktreeKept
)

// WorktreeList is the answer of GET /worktrees.
type WorktreeList struct {
	Worktrees []Worktree `json:"worktrees"`
}

// IntegrateResult is what an integrate did (worktree_integrate's result).
type IntegrateResult = tools.IntegrateResult

// DiscardResult is what a discard removed (worktree_discard's result).
type DiscardResult = tools.DiscardResult

// QueueState says where a merge queue entry stands (see tools.QueueState).
type QueueState = tools.QueueState

// The merge queue entry states.
const (
	QueueQueued   = tools.QueueQueued
	QueueChecking = tools.QueueChecking
	QueueLanding  = tools.QueueLanding
	QueueLanded   = tools.QueueLanded
	QueueFailed   = tools.QueueFailed
	QueueRemoved  = tools.QueueRemoved
)

// QueueEntry is a branch in a merge queue, in GET /worktrees/queue (the
// worktree_queue tool's shape) and, with its check runs, GET
// /worktrees/queue/{id}.
type QueueEntry = tools.QueueEntry

// QueueCheck is one check command run for a batch.
type QueueCheck = tools.QueueCheck

// QueueList is the answer of GET /worktrees/queue.
type QueueList struct {
	Entries []QueueEntry `json:"entries"`
}
