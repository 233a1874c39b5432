// Package tools is the contract of the daemon's MCP tools: their names and
// the arguments each takes, with the descriptions a model reads in the
// tools' input schemas. The daemon serves these types; fakes in tests and
// workers calling the tools use the same ones, so the contract is written
// once.
package tools

// The daemon's tools (SPEC.md "MCP tools").
const (
	ChannelSend        = "channel_send"
	ChannelRead        = "channel_read"
	MyInbox            = "my_inbox"
	MyInboxAck         = "my_inbox_ack"
	MyStatusSet        = "my_status_set"
	TeamMembers        = "team_members"
	TeamDocRead        = "team_doc_read"
	TeamDocWrite       = "team_doc_write"
	TeamDocAppend      = "team_doc_append"
	TeamDocCreate      = "team_doc_create"
	TeamDocList        = "team_doc_list"
	TeamProposalCreate = "team_proposal_create"
	TeamVote           = "team_vote"
	TeamProposalStatus = "team_proposal_status"
	TeamProposalCancel = "team_proposal_cancel"
	ResourceCreate     = "resource_create"
	ResourceRead       = "resource_read"
	AgentSpawn         = "agent_spawn"
	AgentStop          = "agent_stop"
	// The task board (SPEC.md "Control plane, console and coordination").
	TaskCreate   = "task_create"
	TaskList     = "task_list"
	TaskClaim    = "task_claim"
	TaskProgress = "task_progress"
	TaskComplete = "task_complete"
	TaskFail     = "task_fail"
	TaskRelease  = "task_release"
	TaskCancel   = "task_cancel"
	MyTasks      = "my_tasks"
	// Asking the owner (SPEC.md "Human in the loop").
	AskUser      = "ask_user"
	ApprovalWait = "approval_wait"
)

// Names lists every tool, in SPEC.md order.
var Names = []string{ChannelSend, ChannelRead, MyInbox, MyInboxAck, MyStatusSet, TeamMembers, TeamDocRead, TeamDocWrite,
	TeamDocAppend, TeamDocCreate, TeamDocList, TeamProposalCreate, TeamVote, TeamProposalStatus, TeamProposalCancel,
	ResourceCreate, ResourceRead, AgentSpawn, AgentStop,
	WorktreeStatus, WorktreeIntegrate, WorktreeDiscard, WorktreeQueue,
	TaskCreate, TaskList, TaskClaim, TaskProgress, TaskComplete, TaskFail, TaskRelease, TaskCancel, MyTasks,
	AskUser, ApprovalWait, TeamSearch,
	EffortStart, EffortContinue, EffortStatus, EffortLog, EffortFinish}

// Tool arguments. A field without omitempty is required; the jsonschema
// tag is what the model reads.
type (
	// SendArgs is channel_send's input.
	SendArgs struct {
		Message string `json:"message" jsonschema:"the text to post; @name mentions a teammate and wakes them, @all wakes everyone"`
		To      string `json:"to,omitempty" jsonschema:"a teammate's name to send a direct message only they (and you) can see"`
	}
	// ReadArgs is channel_read's input.
	ReadArgs struct {
		SinceSeq int64 `json:"since_seq,omitempty" jsonschema:"only messages after this seq (page forward); omit for the latest messages"`
		Limit    int   `json:"limit,omitempty" jsonschema:"how many messages, 1 to 200 (default 50)"`
	}
	// NoArgs is the input of tools without arguments (my_inbox, team_members, team_doc_list).
	NoArgs struct{}
	// AckArgs is my_inbox_ack's input.
	AckArgs struct {
		UntilSeq int64 `json:"until_seq" jsonschema:"the seq of the newest inbox message you have handled; everything up to it is marked read"`
	}
	// StatusArgs is my_status_set's input.
	StatusArgs struct {
		State *string `json:"state,omitempty" jsonschema:"what you are doing in a word, e.g. working, blocked, waiting, done"`
		Task  *string `json:"task,omitempty" jsonschema:"the task you are on, in one line"`
	}
	// DocArgs is team_doc_read's input.
	DocArgs struct {
		File string `json:"file,omitempty" jsonschema:"document name, a relative path ending in .md, .txt, .json or .yaml (default notes.md)"`
	}
	// DocWriteArgs is the input of team_doc_write and team_doc_append.
	DocWriteArgs struct {
		Content string `json:"content" jsonschema:"the text"`
		File    string `json:"file,omitempty" jsonschema:"document name, a relative path ending in .md, .txt, .json or .yaml (default notes.md)"`
	}
	// DocCreateArgs is team_doc_create's input.
	DocCreateArgs struct {
		File    string `json:"file" jsonschema:"name of the new document, e.g. plan.md or specs/api.md"`
		Content string `json:"content" jsonschema:"its initial text"`
	}
	// ProposalArgs is team_proposal_create's input.
	ProposalArgs struct {
		Type       string   `json:"type" jsonschema:"election, decision, approval or assignment"`
		Title      string   `json:"title" jsonschema:"the question to decide"`
		Options    []string `json:"options,omitempty" jsonschema:"the choices (at least two; approval defaults to approve and reject)"`
		Resolution string   `json:"resolution,omitempty" jsonschema:"plurality (default; ties go to the first option), majority (more than half of votes), unanimous, or creator-decides (plurality, but a tie waits for a changed vote)"`
		Quorum     int      `json:"quorum,omitempty" jsonschema:"votes needed before it can resolve (default: every member)"`
		Binding    bool     `json:"binding,omitempty" jsonschema:"record the result as the team's decision"`
		ExpiresIn  string   `json:"expires_in,omitempty" jsonschema:"how long voting stays open, e.g. 30m or 2h (default 1h); on expiry the votes so far decide"`
	}
	// VoteArgs is team_vote's input.
	VoteArgs struct {
		Proposal string `json:"proposal" jsonschema:"proposal id, e.g. prop-3"`
		Choice   string `json:"choice" jsonschema:"one of the proposal's options"`
		Reason   string `json:"reason,omitempty" jsonschema:"why, in a sentence"`
	}
	// ProposalRefArgs is team_proposal_status's input.
	ProposalRefArgs struct {
		Proposal string `json:"proposal,omitempty" jsonschema:"proposal id; omit to list the active proposals"`
	}
	// CancelArgs is team_proposal_cancel's input.
	CancelArgs struct {
		Proposal string `json:"proposal" jsonschema:"proposal id to cancel (only its creator can)"`
	}
	// ResourceArgs is resource_create's input.
	ResourceArgs struct {
		Content string `json:"content" jsonschema:"the content to store"`
		Type    string `json:"type,omitempty" jsonschema:"markdown, json, text (default) or diff"`
	}
	// SpawnArgs is agent_spawn's input.
	SpawnArgs struct {
		Name         string   `json:"name" jsonschema:"the new agent's name: letters, digits, - and _, unique in the team; teammates mention it as @name"`
		SystemPrompt string   `json:"system_prompt" jsonschema:"what the new agent is for and how it should work: its system prompt"`
		Backend      string   `json:"backend,omitempty" jsonschema:"sdk, claude, codex, cursor or mock; default: your own backend"`
		Model        string   `json:"model,omitempty" jsonschema:"e.g. anthropic/claude-sonnet-4-5; default: your model when the backend is yours, else the backend's default"`
		Roles        []string `json:"roles,omitempty" jsonschema:"roles that route tasks to the new agent (a task with role: reviewer goes only to agents with the role reviewer)"`
	}
	// StopArgs is agent_stop's input.
	StopArgs struct {
		Name string `json:"name" jsonschema:"an agent you spawned"`
	}
	// ResourceReadArgs is resource_read's input.
	ResourceReadArgs struct {
		ID string `json:"id" jsonschema:"resource id, res_ followed by 16 hex digits"`
	}
	// TaskCreateArgs is task_create's input.
	TaskCreateArgs struct {
		Title       string   `json:"title" jsonschema:"what is to be done, in one line (at most 200 characters)"`
		Description string   `json:"description,omitempty" jsonschema:"details the taker needs: context, acceptance criteria, where to look"`
		Priority    int      `json:"priority,omitempty" jsonschema:"higher is taken first (default 0; negative is allowed)"`
		DependsOn   []string `json:"depends_on,omitempty" jsonschema:"ids of tasks of this team (e.g. task-3) that must be completed before this one can be claimed"`
		Parent      string   `json:"parent,omitempty" jsonschema:"id of the task this is a subtask of; the parent can be claimed and completed only after all its subtasks are completed"`
		Assignee    string   `json:"assignee,omitempty" jsonschema:"a teammate's name: only they may claim it (default: anyone)"`
		Role        string   `json:"role,omitempty" jsonschema:"a role (team_members shows each teammate's roles): only a teammate with this role may claim it (default: anyone)"`
	}
	// TaskListArgs is task_list's input.
	TaskListArgs struct {
		State    string `json:"state,omitempty" jsonschema:"only tasks in this state: pending, claimed, in_progress, completed, failed or cancelled"`
		Assignee string `json:"assignee,omitempty" jsonschema:"only tasks assigned to this teammate"`
	}
	// TaskClaimArgs is task_claim's input.
	TaskClaimArgs struct {
		ID string `json:"id,omitempty" jsonschema:"the task to claim, e.g. task-3; omit to get the best ready task for you (assigned to you first, then one asking for a role of yours, then highest priority, then oldest)"`
	}
	// TaskProgressArgs is task_progress's input.
	TaskProgressArgs struct {
		ID      string `json:"id" jsonschema:"a task you hold, e.g. task-3"`
		Note    string `json:"note" jsonschema:"what is done or what comes next, in a line or two"`
		Percent *int   `json:"percent,omitempty" jsonschema:"how far along it is, 0 to 100"`
	}
	// TaskCompleteArgs is task_complete's input.
	TaskCompleteArgs struct {
		ID     string `json:"id" jsonschema:"a task you hold, e.g. task-3"`
		Result string `json:"result,omitempty" jsonschema:"what was done and where to find it (a branch, a file, a document)"`
		// Artifacts are kept with the task and shown with it.
		Artifacts []string `json:"artifacts,omitempty" jsonschema:"files the task produced, as paths relative to your working directory (e.g. docs/report.md); each must exist there"`
	}
	// TaskCancelArgs is task_cancel's input.
	TaskCancelArgs struct {
		ID     string `json:"id" jsonschema:"the task to cancel, e.g. task-3; its subtasks are cancelled with it"`
		Reason string `json:"reason" jsonschema:"why it is no longer wanted"`
	}
	// TaskFailArgs is task_fail's input.
	TaskFailArgs struct {
		ID     string `json:"id" jsonschema:"a task you hold, e.g. task-3"`
		Reason string `json:"reason" jsonschema:"why it cannot be done"`
		Retry  bool   `json:"retry,omitempty" jsonschema:"true if another try may succeed: the task goes back to pending while it has retries left (2 by default), then fails for good"`
	}
	// TaskRefArgs is task_release's input.
	TaskRefArgs struct {
		ID string `json:"id" jsonschema:"a task you hold, e.g. task-3"`
	}
)
