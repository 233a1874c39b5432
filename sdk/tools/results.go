package tools

import "time"

// Message is one channel line as tools return it (and as the daemon's HTTP
// API shows it).
type Message struct {
	Seq      int64  `json:"seq"`
	ID       string `json:"id"`
	Workflow string `json:"workflow,omitempty"`
	Tag      string `json:"tag,omitempty"`
	From     string `json:"from"`
	Content  string `json:"content"`
	// Kind is message, system (from the daemon) or tool (a backend's tool call).
	Kind string `json:"kind"`
	// To is set on a direct message: only From and To see it.
	To string `json:"to,omitempty"`
	// Mentions are the members whose inbox got the message.
	Mentions   []string  `json:"mentions"`
	ResourceID string    `json:"resource_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Member is one teammate in team_members.
type Member struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	State   string `json:"state"`
	Status  string `json:"status,omitempty"`
	Task    string `json:"task,omitempty"`
	// Roles route tasks with a role to the member.
	Roles []string `json:"roles,omitempty"`
	// You marks the calling agent.
	You bool `json:"you"`
}

// DocumentInfo describes one shared document.
type DocumentInfo struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Vote is one member's vote on a proposal.
type Vote struct {
	Voter  string `json:"voter"`
	Choice string `json:"choice"`
	Reason string `json:"reason,omitempty"`
}

// Proposal is a proposal as the proposal tools return it.
type Proposal struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Title      string    `json:"title"`
	Creator    string    `json:"creator"`
	Options    []string  `json:"options"`
	Resolution string    `json:"resolution"`
	Quorum     int       `json:"quorum"`
	Binding    bool      `json:"binding"`
	State      string    `json:"state"`
	Winner     string    `json:"winner,omitempty"`
	Votes      []Vote    `json:"votes"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Task is one task of a team's board as the task tools return it (and as
// the daemon's HTTP API shows it).
type Task struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Priority    int    `json:"priority"`
	// State is pending, claimed, in_progress, completed, failed or
	// cancelled.
	State string `json:"state"`
	// Role, when set, is the role an agent needs to claim the task.
	Role string `json:"role,omitempty"`
	// Ready is set on a pending task that can be claimed now.
	Ready     bool     `json:"ready"`
	DependsOn []string `json:"depends_on"`
	// WaitingOn lists the dependencies and subtasks not completed yet.
	WaitingOn []string `json:"waiting_on,omitempty"`
	Parent    string   `json:"parent,omitempty"`
	Subtasks  []string `json:"subtasks,omitempty"`
	Assignee  string   `json:"assignee,omitempty"`
	CreatedBy string   `json:"created_by"`
	// Holder holds a claimed or in-progress task, and completed or failed
	// a finished one.
	Holder string `json:"holder,omitempty"`
	// HolderRun is the run holding the lease ("" for an outside agent).
	HolderRun string `json:"holder_run,omitempty"`
	// LeaseExpiresAt is when a held task goes back to pending unless its
	// holder shows a sign of life.
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	Percent        *int       `json:"percent,omitempty"`
	Result         string     `json:"result,omitempty"`
	// Artifacts are the files task_complete named, relative to the
	// completing agent's working directory.
	Artifacts []string `json:"artifacts,omitempty"`
	// Error is a failure's reason, or why the task was cancelled.
	Error      string    `json:"error,omitempty"`
	Retries    int       `json:"retries"`
	MaxRetries int       `json:"max_retries"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Tool results, the structured content each tool returns.
type (
	// MyTasksResult is my_tasks's result: what the caller holds and what
	// it may claim now, best first (the order task_claim without an id
	// takes them in).
	MyTasksResult struct {
		Held      []Task   `json:"held"`
		Claimable []Task   `json:"claimable"`
		Roles     []string `json:"roles"`
	}
	// SendResult is channel_send's result.
	SendResult struct {
		Seq        int64    `json:"seq"`
		ID         string   `json:"id"`
		Mentions   []string `json:"mentions"`
		To         string   `json:"to,omitempty"`
		ResourceID string   `json:"resource_id,omitempty"`
		// Warnings say which recipient will not read it soon (paused,
		// stopped) and what lets it run again.
		Warnings []string `json:"warnings,omitempty"`
	}
	// MessagesResult is channel_read's result.
	MessagesResult struct {
		Messages []Message `json:"messages"`
		Count    int       `json:"count"`
	}
	// InboxResult is my_inbox's result.
	InboxResult struct {
		Messages []Message `json:"messages"`
		Count    int       `json:"count"`
		// NewestSeq is what to pass to my_inbox_ack once they are handled.
		NewestSeq int64 `json:"newest_seq"`
	}
	// AckResult is my_inbox_ack's result.
	AckResult struct {
		Cursor int64 `json:"cursor"`
	}
	// StatusResult is my_status_set's result.
	StatusResult struct {
		State string `json:"state"`
		Task  string `json:"task"`
	}
	// MembersResult is team_members' result.
	MembersResult struct {
		Members []Member `json:"members"`
		Count   int      `json:"count"`
	}
	// DocResult is team_doc_read's result.
	DocResult struct {
		File    string `json:"file"`
		Content string `json:"content"`
	}
	// DocWritten is the result of team_doc_write, _append and _create.
	DocWritten struct {
		File string `json:"file"`
	}
	// DocListResult is team_doc_list's result.
	DocListResult struct {
		Documents []DocumentInfo `json:"documents"`
		Count     int            `json:"count"`
	}
	// ProposalsResult is team_proposal_status's result.
	ProposalsResult struct {
		Proposals []Proposal `json:"proposals"`
		Count     int        `json:"count"`
	}
	// SpawnResult is agent_spawn's result: the new teammate.
	SpawnResult struct {
		Name    string `json:"name"`
		Backend string `json:"backend"`
		Model   string `json:"model,omitempty"`
		// Live counts the caller's spawned agents not stopped, this one
		// included; Max is its max_spawned.
		Live int `json:"live"`
		Max  int `json:"max"`
	}
	// StopResult is agent_stop's result.
	StopResult struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	// TasksResult is task_list's result.
	TasksResult struct {
		Tasks []Task `json:"tasks"`
		Count int    `json:"count"`
	}
	// ResourceResult is the result of resource_create and resource_read.
	ResourceResult struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Content string `json:"content,omitempty"`
		From    string `json:"from,omitempty"`
	}
)
