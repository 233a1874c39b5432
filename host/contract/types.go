package contract

import (
	"encoding/json"
	"strings"
	"time"
)

// Workflow is a workflow:tag instance and its members.
type Workflow struct {
	Name       string        `json:"name"`
	Tag        string        `json:"tag"`
	Target     string        `json:"target"`
	SourcePath string        `json:"source_path,omitempty"`
	State      WorkflowState `json:"state"`
	Error      string        `json:"error,omitempty"`
	Agents     []string      `json:"agents"`
	// Members are the agents again with their states, so that one call
	// answers `agent-worker workflows`.
	Members   []Member  `json:"members"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Progress is filled by GET /workflows/{name}/{tag} and the idle event.
	Progress *Progress `json:"progress,omitempty"`
	// StartSeq is the channel seq before the kickoff (POST /workflows), so
	// a client can show the channel from the kickoff on.
	StartSeq int64 `json:"start_seq,omitempty"`
	// TakenOver: the workflow was already running on the cluster, and the
	// member that answered took over watching its file.
	TakenOver bool `json:"taken_over,omitempty"`
	// Spend totals the runs of the workflow:tag, of members gone since
	// included.
	Spend *Spend `json:"spend,omitempty"`
	// Budget is the workflow:tag's own budget, if it has one, and what it
	// covers has spent (GET /workflows and GET /workflows/{name}/{tag}).
	Budget *Budget `json:"budget,omitempty"`
	// Pending is an edit of the workflow's file that widens what its runs
	// may do, waiting for the owner (POST /workflows/{name}/{tag}/accept);
	// the last accepted config keeps running meanwhile.
	Pending *PendingEdit `json:"pending,omitempty"`
}

// PendingProblem is the line status lists for w's edit that waits.
func PendingProblem(w Workflow) string {
	return "workflow " + w.Target + ": an edit of " + w.SourcePath + " widens what its runs may do and waits for you; the last accepted version keeps running. " +
		"It would: " + strings.Join(w.Pending.Widens, "; ") + ". Apply it with `agent-worker workflows accept " + w.Target + "`, or undo the edit"
}

// PendingEdit is an edit of a workflow's file held for its owner: Widens
// says, one line each, what it would let runs do that they may not now.
type PendingEdit struct {
	Widens []string  `json:"widens"`
	Since  time.Time `json:"since"`
}

// Budget is a budget's limits (nil: unset) and the spend it counts: the
// runs since the workflow (re)started.
type Budget struct {
	USD    *float64 `json:"usd,omitempty"`
	Tokens *int64   `json:"tokens,omitempty"`
	Runs   *int64   `json:"runs,omitempty"`
	Hard   bool     `json:"hard,omitempty"`
	Spent  Spend    `json:"spent"`
}

// Member is one agent of a workflow and its state.
type Member struct {
	Name  string     `json:"name"`
	State AgentState `json:"state"`
}

// Progress says whether a workflow's team has finished its work and what it
// cost: `agent-worker run` returns when Idle.
type Progress struct {
	// Idle: no agent running or with unread work, no active proposal,
	// no merge queue entry on its way.
	Idle         bool     `json:"idle"`
	Failed       []string `json:"failed_agents,omitempty"`
	Runs         int      `json:"runs"`
	FailedRuns   int      `json:"failed_runs"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      float64  `json:"cost_usd"`
	// UnpricedRuns used tokens at an unknown cost, left out of CostUSD.
	UnpricedRuns int   `json:"unpriced_runs,omitempty"`
	DurationMS   int64 `json:"duration_ms"`
}

// StartWorkflow is the body of POST /workflows. The daemon reads and parses
// the file; Content, when set, is used instead of reading Path (which still
// names the file for messages and relative paths).
type StartWorkflow struct {
	Path    string   `json:"path"`
	Content string   `json:"content,omitempty"`
	Tag     string   `json:"tag,omitempty"`
	Args    []string `json:"args,omitempty"` // workflow params, the CLI's arguments after --
	// DryRun parses and validates only: the answer names the workflow and
	// its channel's current seq, so a client can subscribe to its events
	// before starting it.
	DryRun bool `json:"dry_run,omitempty"`
}

// WorkflowList is the body of GET /workflows.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
}

// ListenFallback is a daemon on a free port because the default address
// was taken: Default is that address and HeldBy who held it ("the
// agent-worker daemon of home /x (pid 12)" or "another program").
type ListenFallback struct {
	Default string `json:"default"`
	HeldBy  string `json:"held_by"`
}

// Cluster is the daemons that share one store, as status shows them.
type Cluster struct {
	// Member is the id of the daemon that answered.
	Member  string          `json:"member"`
	Members []ClusterMember `json:"members"`
}

// ClusterMember is one daemon of a cluster. Alive is false once its
// heartbeat is older than the lease (the others then take its work back)
// or it stopped; StoppedAt says when.
type ClusterMember struct {
	ID             string     `json:"id"`
	Host           string     `json:"host"`
	PID            int        `json:"pid"`
	Address        string     `json:"address"`
	Version        string     `json:"version"`
	StartedAt      time.Time  `json:"started_at"`
	HeartbeatAgeMS int64      `json:"heartbeat_age_ms"`
	Alive          bool       `json:"alive"`
	StoppedAt      *time.Time `json:"stopped_at,omitempty"`
}

// Worker is a run in flight as status shows it: whose run it is and how
// long ago its plugin process last proved alive (an event, or an answered
// ping). A run whose heartbeat is older than the daemon's
// --heartbeat-timeout is killed and retried.
type Worker struct {
	Run            string    `json:"run"`
	Agent          string    `json:"agent"`
	Backend        string    `json:"backend"`
	PID            int       `json:"pid"`
	StartedAt      time.Time `json:"started_at"`
	HeartbeatAt    time.Time `json:"heartbeat_at"`
	HeartbeatAgeMS int64     `json:"heartbeat_age_ms"`
}

// StoreHealth says whether the daemon can still save: the database file
// is the one it opened (Linked), and the last write that failed, if any.
type StoreHealth struct {
	Path   string `json:"path"`
	Linked bool   `json:"linked"`
	// Failing: the most recent write failed; nothing is being saved.
	Failing     bool       `json:"failing"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// UnreachableSince is set while the database server cannot be
	// reached: since when the daemon has seen it so (LastError says how).
	UnreachableSince *time.Time `json:"unreachable_since,omitempty"`
	// CorruptSince is set once a read or write found the database
	// damaged, and Corrupt is what SQLite said then. It stays set until
	// the daemon stops: the file has to be restored or recovered.
	CorruptSince *time.Time `json:"corrupt_since,omitempty"`
	Corrupt      string     `json:"corrupt,omitempty"`
}

// BackupRequest is the body of POST /backup: where the daemon writes a
// copy of its SQLite database. Path is absolute (the CLI resolves a
// relative one against its own directory) and on the daemon's machine;
// an existing file is replaced only with Force.
type BackupRequest struct {
	Path  string `json:"path"`
	Force bool   `json:"force,omitempty"`
}

// Backup is what POST /backup wrote: a copy of Database at Path, Bytes
// long, checked with quick_check, in TookMS.
type Backup struct {
	Path     string `json:"path"`
	Database string `json:"database"`
	Bytes    int64  `json:"bytes"`
	TookMS   int64  `json:"took_ms"`
}

// Counts sizes the daemon's state.
type Counts struct {
	Agents    int `json:"agents"`
	Workflows int `json:"workflows"`
	Messages  int `json:"messages"`
	Runs      int `json:"runs"`
}

// Status is the body of answers that only confirm an action.
type Status struct {
	Status string `json:"status"`
	Target string `json:"target,omitempty"`
}

// Cancelled is what a cancel did: Run is the run that was ended (its end
// recorded as cancelled) and Target its agent.
type Cancelled struct {
	Status string `json:"status"`
	Run    string `json:"run,omitempty"`
	Target string `json:"target,omitempty"`
}

// Reset is what POST /agents/{target}/reset did: Forgotten counts the
// backends whose conversation (the sdk backend's memory, a CLI's session)
// the agent no longer has.
type Reset struct {
	Status    string `json:"status"` // "reset"
	Target    string `json:"target"`
	Forgotten int    `json:"forgotten"`
}

// TaskCreate is the body of POST /tasks: the user adds a task to the board
// of Target (@workflow[:tag]).
type TaskCreate struct {
	Target      string   `json:"target"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Priority    int      `json:"priority,omitempty"`
	DependsOn   []string `json:"depends_on,omitempty"`
	Parent      string   `json:"parent,omitempty"`
	Assignee    string   `json:"assignee,omitempty"`
	// Role, when set, lets only the agents with that role claim it.
	Role string `json:"role,omitempty"`
}

// TaskCancel is the body of POST /tasks/{id}/cancel: why the user
// cancels a task (and its open subtasks).
type TaskCancel struct {
	Reason string `json:"reason"`
	// Target, when set, checks the task is on that board (@wf[:tag]).
	Target string `json:"target,omitempty"`
}

// TaskEvent is one line of a task's history: a state change, or a
// progress note (with its percentage, if it gave one).
type TaskEvent struct {
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	// Kind is created, claimed, progress, completed, failed, retried,
	// released or returned (its lease was lost).
	Kind    string `json:"kind"`
	State   string `json:"state"`
	Note    string `json:"note,omitempty"`
	Percent *int   `json:"percent,omitempty"`
}

// SendRequest is the body of POST /send: a human (sender "user") writes
// into a channel. An agent target gets an @mention prepended.
type SendRequest struct {
	Target  string `json:"target"`
	Message string `json:"message"`
	// To makes the message a DM to that member.
	To string `json:"to,omitempty"`
}

// Document is the body of GET /docs/{wf}/{tag}/{path}.
type Document struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// DocumentWrite is the body of PUT (replace) and POST (append) on
// /docs/{wf}/{tag}/{path}.
type DocumentWrite struct {
	Content string `json:"content"`
	// Create refuses to replace an existing document (PUT only).
	Create bool `json:"create,omitempty"`
}

// MCPConfig is the body of POST /agents/{target}/mcp-config: what an outside
// MCP client needs to act as the agent.
type MCPConfig struct {
	Agent string `json:"agent"`
	URL   string `json:"url"`
	Token string `json:"token"`
	// TLS is the daemon's certificate when URL is https: what the client
	// must trust (a self-signed one's file) or pin.
	TLS *TLSInfo `json:"tls,omitempty"`
}

// Plugin is one executable found in a plugins directory.
type Plugin struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // backend or docs
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// ExecPath is the daemon's private copy of the bytes it hashed, which
	// every process of the plugin executes: a file replaced in the plugins
	// directory is never run before it has been checked.
	ExecPath     string   `json:"exec_path,omitempty"`
	Version      string   `json:"version,omitempty"`
	APIVersions  []string `json:"api_versions,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// Status is what the plugin reported about its environment when it was
	// fingerprinted (a CLI backend: its CLI's version and path, or how to
	// install it); empty if it reports nothing.
	Status string `json:"status,omitempty"`
	// Error says why the binary cannot be used; such a plugin is listed but
	// never run.
	Error string `json:"error,omitempty"`
	// Shadowed is set when a plugin of the same kind and name in an earlier
	// directory wins.
	Shadowed  bool      `json:"shadowed,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	// Spares counts the warm spare processes of a backend since the
	// daemon started; absent for a backend that has had no run.
	Spares *SpareStats `json:"spares,omitempty"`
}

// SpareEvent is what happened to a warm spare process, for the counters.
type SpareEvent string

// Spare events. SpareTaken and SpareKilled end a live spare; ColdStart is
// a run that found no spare ready and started its process itself.
const (
	SpareStarted SpareEvent = "started"
	SpareTaken   SpareEvent = "taken"
	SpareKilled  SpareEvent = "killed"
	ColdStart    SpareEvent = "cold_start"
)

// SpareStats are a backend's warm spare counters: spares waiting now,
// spares started and spares a run took, and runs that found none ready
// and started their process cold.
type SpareStats struct {
	Live       int   `json:"live"`
	Started    int64 `json:"started"`
	Used       int64 `json:"used"`
	ColdStarts int64 `json:"cold_starts"`
}

// PluginList is the body of GET /plugins.
type PluginList struct {
	Dirs    []string `json:"dirs"`
	Plugins []Plugin `json:"plugins"`
}

// RunRequest is the body of POST /run and POST /serve: a user's message to
// an agent, which the daemon writes to the channel and then runs the agent.
type RunRequest struct {
	Agent   string `json:"agent"`
	Message string `json:"message"`
}

// RunChunk is an SSE `chunk` event of POST /run: text as it arrives.
type RunChunk struct {
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

// RunTool is an SSE `tool` event: a tool call, or (with Result set) its
// outcome.
type RunTool struct {
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	Done    bool            `json:"done"`
}

// Usage is what a run consumed.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Run is one recorded run (GET /runs).
type Run struct {
	ID            string          `json:"id"`
	Agent         string          `json:"agent"`
	Backend       string          `json:"backend"`
	PluginSHA256  string          `json:"plugin_sha256,omitempty"`
	Attempt       int             `json:"attempt"`
	State         RunState        `json:"state"`
	StartedAt     time.Time       `json:"started_at"`
	EndedAt       *time.Time      `json:"ended_at,omitempty"`
	DurationMS    int64           `json:"duration_ms,omitempty"`
	InboxUntilSeq int64           `json:"inbox_until_seq"`
	Error         string          `json:"error,omitempty"`
	Usage         json.RawMessage `json:"usage,omitempty"`
	// Scope is the run's workflow:tag.
	Scope string `json:"scope"`
	// Daemon is the id of the daemon (the cluster member) that ran it.
	Daemon string `json:"daemon,omitempty"`
	// TraceID is the OpenTelemetry trace the run's span is in (32 hex
	// digits), when the daemon exports traces.
	TraceID string `json:"trace_id,omitempty"`
	// Model is the model the run was priced for.
	Model        string `json:"model,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// CostUSD is nil when the cost is unknown: the backend reported none
	// and the daemon's price table does not know the model.
	CostUSD *float64 `json:"cost_usd"`
	// CostSource is "plugin" (reported by the backend) or "prices" (the
	// daemon's price table, PricesTaken).
	CostSource string `json:"cost_source,omitempty"`
}

// Spend totals the runs of an agent or a workflow:tag, ever.
type Spend struct {
	Runs         int     `json:"runs"`
	FailedRuns   int     `json:"failed_runs"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// UnpricedRuns used tokens at an unknown cost, which CostUSD leaves
	// out.
	UnpricedRuns int `json:"unpriced_runs,omitempty"`
}

// RunEvent is one entry of a run's transcript.
type RunEvent struct {
	N    int             `json:"n"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	At   time.Time       `json:"at"`
}

// RunEventPrompt is the kind of a transcript's first event: what the run
// was given (PromptEvent). The other kinds are the backend's events (text,
// tool_call, tool_result, usage, session, result, log).
const RunEventPrompt = "prompt"

// RunEventContext is the kind of the event that follows the prompt when
// the daemon sent the run its starting context: the context as the
// daemon's tools returned it (channel tail, notes, documents), which
// `runs replay` shows the replay again.
const RunEventContext = "context"

// PromptEvent is the data of a run's prompt event: the agent's system
// prompt and the inbox messages the run was shown, up to InboxUntilSeq.
// The worker builds the model's prompt from them.
type PromptEvent struct {
	System        string          `json:"system"`
	InboxUntilSeq int64           `json:"inbox_until_seq"`
	Inbox         []PromptMessage `json:"inbox"`
	// Omitted counts the newest messages left out to keep the event small.
	Omitted int `json:"omitted,omitempty"`
}

// PromptMessage is one inbox message in a PromptEvent.
type PromptMessage struct {
	Seq     int64  `json:"seq"`
	From    string `json:"from"`
	To      string `json:"to,omitempty"`
	Content string `json:"content"`
}

// RunList is the body of GET /runs.
type RunList struct {
	Runs []Run `json:"runs"`
}

// RunDetail is the body of GET /runs/{id}.
type RunDetail struct {
	Run
	Events []RunEvent `json:"events"`
}

// ScheduleRequest is the body of PUT /agents/{target}/schedule.
type ScheduleRequest struct {
	Schedule     string `json:"schedule"`
	WakeupPrompt string `json:"wakeup_prompt,omitempty"`
}

// RunEventInfo is the data of the run_started, run_finished and run_failed
// events of GET /events.
type RunEventInfo struct {
	Agent      string `json:"agent"`
	RunID      string `json:"run_id"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// AgentStateEvent is the data of the agent_state event of GET /events.
type AgentStateEvent struct {
	Agent string     `json:"agent"`
	State AgentState `json:"state"`
	Error string     `json:"error,omitempty"`
}

// WorkflowEvent is the data of the workflow event of GET /events: a
// reloaded config (Error empty) or a rejected edit.
type WorkflowEvent struct {
	Target string `json:"target"`
	// Change is started, reloaded, rejected (with Error) or pending: an
	// edit that widens what runs may do waits for the owner (Error says
	// what it would allow).
	Change string `json:"change"`
	Error  string `json:"error,omitempty"`
}

// ToolEvent is the data of the tool event of GET /events: an agent's
// backend called a tool.
type ToolEvent struct {
	Agent string `json:"agent"`
	Name  string `json:"name"`
	Args  string `json:"args,omitempty"`
}

// BudgetRequest is the body of PUT /budgets/{target}: the limits to set
// (at least one), for a workflow:tag (target @wf:tag) or one agent.
type BudgetRequest struct {
	USD    *float64 `json:"usd,omitempty"`
	Tokens *int64   `json:"tokens,omitempty"`
	Runs   *int64   `json:"runs,omitempty"`
	// Hard cancels a run in flight that crosses the budget.
	Hard bool `json:"hard,omitempty"`
}

// SandboxState is whether the daemon confines runs.
type SandboxState string

// Sandbox states.
const (
	SandboxOn          SandboxState = "on"          // runs are confined (Landlock)
	SandboxOff         SandboxState = "off"         // --sandbox off: runs are not confined
	SandboxUnavailable SandboxState = "unavailable" // the kernel cannot confine runs here
)

// SandboxInfo is the daemon's run sandbox in status, info, doctor and the
// console: its state, the --sandbox mode, and a line that says what it
// means (the Landlock ABI, or why it is unavailable and what runs do).
type SandboxInfo struct {
	State  SandboxState `json:"state"`
	Mode   string       `json:"mode"`
	Detail string       `json:"detail"`
	ABI    int          `json:"abi,omitempty"`
}

// String is the one line status prints: "on (landlock ABI 7)",
// "unavailable: <why>…".
func (s SandboxInfo) String() string {
	if s.State == SandboxUnavailable {
		return "unavailable: " + s.Detail
	}
	return string(s.State) + " (" + s.Detail + ")"
}

// ProcessControl is how the daemon makes sure nothing a run started
// outlives it, for status: "cgroup v2" (each plugin process in a cgroup
// of its own, killed whole), "subreaper" (where no cgroup can be made:
// each sdk plugin process kills and reaps what its run left as it stops)
// or "process group" (macOS: a plugin kills its children's process
// groups and its own as it stops, and stops when its daemon is gone).
type ProcessControl struct {
	Mechanism string `json:"mechanism"`
	Detail    string `json:"detail"`
	// Limits are a run's limits by default (--run-limits) and which of
	// them the daemon enforces here; Unenforced names those it cannot
	// (pids, memory, cpu), each with why.
	Limits     string   `json:"limits,omitempty"`
	Unenforced []string `json:"unenforced,omitempty"`
}
