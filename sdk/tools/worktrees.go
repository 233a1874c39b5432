package tools

import "time"

// The git worktree tools, served when a workflow says
// workspace: {git: worktree} (each agent then works in a worktree of its
// own on branch aw/<workflow>/<tag>/<agent>).
const (
	WorktreeStatus    = "worktree_status"
	WorktreeIntegrate = "worktree_integrate"
	WorktreeDiscard   = "worktree_discard"
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
		Target string `json:"target,omitempty" jsonschema:"the branch to merge into (default: the workspace's base branch)"`
	}
	// WorktreeDiscardArgs is worktree_discard's input.
	WorktreeDiscardArgs struct {
		Agent  string `json:"agent" jsonschema:"the teammate whose worktree and branch to throw away"`
		Reason string `json:"reason" jsonschema:"why, in a sentence; posted in the channel"`
		Force  bool   `json:"force,omitempty" jsonschema:"discard even uncommitted changes in the worktree"`
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
	Agent    string        `json:"agent"`
	Workflow string        `json:"workflow"`
	Tag      string        `json:"tag"`
	State    WorktreeState `json:"state"`
	Branch   string        `json:"branch"`
	Base     string        `json:"base"`
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
	// IntegrateResult is worktree_integrate's result.
	IntegrateResult struct {
		Agent  string `json:"agent"`
		Branch string `json:"branch"`
		Target string `json:"target"`
		// Merged is false when the target already had every commit of
		// the branch (nothing to do); Commit is then the target's head.
		Merged bool   `json:"merged"`
		Commit string `json:"commit"`
		// Files are the paths the merge changed on the target.
		Files []string `json:"files"`
	}
	// DiscardResult is worktree_discard's result.
	DiscardResult struct {
		Agent  string `json:"agent"`
		Branch string `json:"branch"`
		// LastCommit is the discarded branch's head ("" if it had
		// none), which `git branch <name> <sha>` brings back until git
		// prunes it.
		LastCommit string `json:"last_commit,omitempty"`
	}
)
