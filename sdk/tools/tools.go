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
)

// Names lists every tool, in SPEC.md order.
var Names = []string{ChannelSend, ChannelRead, MyInbox, MyInboxAck, MyStatusSet, TeamMembers, TeamDocRead, TeamDocWrite,
	TeamDocAppend, TeamDocCreate, TeamDocList, TeamProposalCreate, TeamVote, TeamProposalStatus, TeamProposalCancel,
	ResourceCreate, ResourceRead, AgentSpawn, AgentStop,
	WorktreeStatus, WorktreeIntegrate, WorktreeDiscard}

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
		Name         string `json:"name" jsonschema:"the new agent's name: letters, digits, - and _, unique in the team; teammates mention it as @name"`
		SystemPrompt string `json:"system_prompt" jsonschema:"what the new agent is for and how it should work: its system prompt"`
		Backend      string `json:"backend,omitempty" jsonschema:"sdk, claude, codex, cursor or mock; default: your own backend"`
		Model        string `json:"model,omitempty" jsonschema:"e.g. anthropic/claude-sonnet-4-5; default: your model when the backend is yours, else the backend's default"`
	}
	// StopArgs is agent_stop's input.
	StopArgs struct {
		Name string `json:"name" jsonschema:"an agent you spawned"`
	}
	// ResourceReadArgs is resource_read's input.
	ResourceReadArgs struct {
		ID string `json:"id" jsonschema:"resource id, res_ followed by 16 hex digits"`
	}
)
