package contract

// IntegrateRequest is the body of POST /worktrees/{agent}/integrate:
// the branch to merge into, the workspace's base when empty.
type IntegrateRequest struct {
	Target string `json:"target,omitempty"`
	// Repo names the workspace repository (workspace.repos) whose branch
	// to merge; "" is the workflow's own.
	Repo string `json:"repo,omitempty"`
}

// DiscardRequest is the body of POST /worktrees/{agent}/discard. Force
// throws away uncommitted changes too.
type DiscardRequest struct {
	Reason string `json:"reason"`
	Force  bool   `json:"force,omitempty"`
	// Repo is as in IntegrateRequest.
	Repo string `json:"repo,omitempty"`
}

// DequeueRequest is the body of DELETE /worktrees/queue/{id}: why, for
// the channel line.
type DequeueRequest struct {
	Reason string `json:"reason,omitempty"`
}
