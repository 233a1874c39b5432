package tools

import "time"

// The git worktree tools, served when a workflow says
// workspace: {git: worktree} (each agent then works in a worktree of its
// own on branch aw/<workflow>/<tag>/<agent>).
const (
	WorktreeStatus    = "worktree_status"
	WorktreeIntegrate = "worktree_integrate"
	WorktreeDiscard   = "worktree_discard"
	WorktreeQueue     = "worktree_queue"
)

// Worktree tool arguments.
type (
	// WorktreeStatusArgs is worktree_status's input.
	WorktreeStatusArgs struct {
		Agent string `json:"agent,omitempty" jsonschema:"a teammate's name (or yours); omit for every agent of your team"`
	}
	// WorktreeIntegrateArgs is worktree_integrate's input.
	WorktreeIntegrateArgs struct {
		Agent  string `json:"agent" jsonschema:"the teammate whose branch to merge"`
		Target string `json:"target,omitempty" jsonschema:"the branch to merge into (default: the repository's base branch)"`
		Repo   string `json:"repo,omitempty" jsonschema:"the workspace repository (workspace.repos) whose branch to merge; omit for the workflow's own"`
	}
	// WorktreeQueueArgs is worktree_queue's input.
	WorktreeQueueArgs struct {
		All bool `json:"all,omitempty" jsonschema:"also list entries that already landed, failed or were removed (the newest 50)"`
	}
	// WorktreeDiscardArgs is worktree_discard's input.
	WorktreeDiscardArgs struct {
		Agent  string `json:"agent" jsonschema:"the teammate whose worktree and branch to throw away"`
		Reason string `json:"reason" jsonschema:"why, in a sentence; posted in the channel"`
		Force  bool   `json:"force,omitempty" jsonschema:"discard even uncommitted changes in the worktree"`
		Repo   string `json:"repo,omitempty" jsonschema:"the workspace repository (workspace.repos) whose worktree to discard; omit for the workflow's own"`
	}
)

// WorktreeState says where an agent's worktree stands.
type WorktreeState string

// Worktree states.
const (
	// WorktreeActive: the agent is live and its worktree exists.
	WorktreeActive WorktreeState = "active"
	// WorktreeNone: the agent is live but has not run yet; its worktree
	// is made before its first run.
	WorktreeNone WorktreeState = "none"
	// WorktreeKept: the agent stopped (or its workflow did), but its
	// branch holds commits not merged into the base, or its worktree
	// uncommitted changes, so both were kept; KeptBecause says which.
	// Integrate or discard it.
	WorktreeKept WorktreeState = "kept"
)

// Worktree is one agent's worktree as worktree_status (and GET /worktrees)
// shows it.
type Worktree struct {
	Agent    string `json:"agent"`
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	// Repo is the workspace repository the worktree is of ("" for the
	// workflow's own).
	Repo   string        `json:"repo,omitempty"`
	State  WorktreeState `json:"state"`
	Branch string        `json:"branch"`
	Base   string        `json:"base"`
	// Path is the worktree's directory; "" when there is none.
	Path string `json:"path,omitempty"`
	// Ahead and Behind count the commits the branch has that the base
	// lacks, and the other way round.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Changed are the worktree's uncommitted changes, untracked files
	// included.
	Changed    []FileChange `json:"changed"`
	LastCommit *Commit      `json:"last_commit,omitempty"`
	// KeptBecause says why a kept worktree was not removed.
	KeptBecause string `json:"kept_because,omitempty"`
	// QueueID and QueueState are the branch's entry in the merge queue,
	// while it waits there or is being checked; "" otherwise.
	QueueID    string     `json:"queue_id,omitempty"`
	QueueState QueueState `json:"queue_state,omitempty"`
}

// QueueState says where a merge queue entry stands.
type QueueState string

// Merge queue entry states: queued → checking → landing → landed, or
// failed; removed by dequeue. A daemon that restarts puts checking
// entries back to queued and finishes landing ones.
const (
	QueueQueued   QueueState = "queued"
	QueueChecking QueueState = "checking"
	QueueLanding  QueueState = "landing"
	QueueLanded   QueueState = "landed"
	QueueFailed   QueueState = "failed"
	QueueRemoved  QueueState = "removed"
)

// Pending says whether the entry is still on its way to the base.
func (s QueueState) Pending() bool {
	return s == QueueQueued || s == QueueChecking || s == QueueLanding
}

// QueueEntry is one branch in a merge queue, as worktree_queue (and GET
// /worktrees/queue) shows it.
type QueueEntry struct {
	ID       string     `json:"id"`
	Workflow string     `json:"workflow"`
	Tag      string     `json:"tag"`
	Agent    string     `json:"agent"`
	Branch   string     `json:"branch"`
	Base     string     `json:"base"`
	State    QueueState `json:"state"`
	// By is who asked for the integrate: "user" or a planner.
	By string `json:"by"`
	// Position counts the pending entries ahead of this one (0: next).
	Position int `json:"position,omitempty"`
	// Head is the branch's commit the queue last merged.
	Head string `json:"head,omitempty"`
	// Commit is the merge commit that landed the branch on the base.
	Commit string `json:"commit,omitempty"`
	// Command is the check that failed, Output the tail of its output,
	// Reason the failure (or removal) in a sentence, Files the
	// conflicting files.
	Command   string    `json:"command,omitempty"`
	Output    string    `json:"output,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Files     []string  `json:"files,omitempty"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Checks are the check runs that included the entry (queue show).
	Checks []QueueCheck `json:"checks,omitempty"`
}

// QueueCheck is one check command run for a batch: what was merged, how
// it ended and its output (the last 64 KiB).
type QueueCheck struct {
	// Batch names the entries merged for this run, in order.
	Batch      []string  `json:"batch"`
	Command    string    `json:"command"`
	ExitCode   int       `json:"exit_code"`
	TimedOut   bool      `json:"timed_out,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	Output     string    `json:"output"`
	At         time.Time `json:"at"`
}

// FileChange is one uncommitted change: git status's two-letter code
// (" M", "A ", "??", ...) and the path.
type FileChange struct {
	Status string `json:"status"`
	Path   string `json:"path"`
}

// Commit is a branch's newest commit.
type Commit struct {
	SHA     string    `json:"sha"`
	Subject string    `json:"subject"`
	Author  string    `json:"author"`
	Time    time.Time `json:"time"`
}

// Worktree tool results.
type (
	// WorktreesResult is worktree_status's result.
	WorktreesResult struct {
		Worktrees []Worktree `json:"worktrees"`
		Count     int        `json:"count"`
	}
	// QueueResult is worktree_queue's result.
	QueueResult struct {
		Entries []QueueEntry `json:"entries"`
		Count   int          `json:"count"`
	}
	// IntegrateResult is worktree_integrate's result.
	IntegrateResult struct {
		Agent  string `json:"agent"`
		Repo   string `json:"repo,omitempty"`
		Branch string `json:"branch"`
		Target string `json:"target"`
		// Merged is false when the target already had every commit of
		// the branch (nothing to do); Commit is then the target's head.
		// A queued branch is neither merged nor has a commit yet.
		Merged bool   `json:"merged"`
		Commit string `json:"commit"`
		// Files are the paths the merge changed on the target.
		Files []string `json:"files"`
		// Queued is true when the workspace has checks: the branch was
		// put in the merge queue as QueueID (Position entries ahead of
		// it) instead of merged; the outcome comes as a channel message.
		Queued   bool   `json:"queued,omitempty"`
		QueueID  string `json:"queue_id,omitempty"`
		Position int    `json:"position,omitempty"`
	}
	// DiscardResult is worktree_discard's result.
	DiscardResult struct {
		Agent  string `json:"agent"`
		Repo   string `json:"repo,omitempty"`
		Branch string `json:"branch"`
		// LastCommit is the discarded branch's head ("" if it had
		// none), which `git branch <name> <sha>` brings back until git
		// prunes it.
		LastCommit string `json:"last_commit,omitempty"`
	}
)
