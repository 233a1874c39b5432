package api

import (
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"

	"github.com/agent-worker/agent-worker/host/contract"
)

// AgentSpec is the body of POST /agents: what a user decides about an agent.
type AgentSpec struct {
	Name         string `json:"name"`
	Workflow     string `json:"workflow,omitempty"`
	Tag          string `json:"tag,omitempty"`
	Backend      string `json:"backend,omitempty"`
	Model        string `json:"model,omitempty"`
	System       string `json:"system,omitempty"`
	Schedule     string `json:"schedule,omitempty"`
	WakeupPrompt string `json:"wakeup_prompt,omitempty"`
	// Config is the backend configuration, a JSON object on the wire.
	Config backend.AgentConfig `json:"config,omitzero"`
	// Roles route tasks with a role to the agent (`new --role`).
	Roles []string `json:"roles,omitempty"`
}

// Agent is an agent as the daemon reports it: its spec plus what the daemon
// knows about it.
type Agent struct {
	Name         string              `json:"name"`
	Workflow     string              `json:"workflow"`
	Tag          string              `json:"tag"`
	Target       string              `json:"target"`
	Backend      string              `json:"backend"`
	Model        string              `json:"model,omitempty"`
	System       string              `json:"system,omitempty"`
	Schedule     string              `json:"schedule,omitempty"`
	WakeupPrompt string              `json:"wakeup_prompt,omitempty"`
	Config       backend.AgentConfig `json:"config,omitzero"`
	State        AgentState          `json:"state"`
	Task         string              `json:"task,omitempty"`
	Error        string              `json:"error,omitempty"`
	InboxDepth   int                 `json:"inbox_depth"`
	// Session is the Claude Code session attached through hooks, if any.
	Session *AttachedSession `json:"session,omitempty"`
	// Warnings say what will make the agent's runs fail although it could
	// be registered, e.g. an API key missing from the daemon's environment.
	Warnings  []string  `json:"warnings,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Runs are the most recent runs, newest first (GET /agents/{target}
	// only).
	Runs []Run `json:"runs,omitempty"`
	// Spend totals the agent's runs.
	Spend *Spend `json:"spend,omitempty"`
	// CanSpawn: the agent may spawn up to MaxSpawned agents at once
	// (agent_spawn). SpawnedBy names the agent that spawned this one.
	CanSpawn   bool   `json:"can_spawn,omitempty"`
	MaxSpawned int    `json:"max_spawned,omitempty"`
	SpawnedBy  string `json:"spawned_by,omitempty"`
	// Roles are the roles a task may ask for to go to this agent.
	Roles []string `json:"roles,omitempty"`
}

// AgentList is the body of GET /agents.
type AgentList struct {
	Agents []Agent `json:"agents"`
}

// Health is the body of GET /health: everything `agent-worker status` shows,
// in one call.
type Health struct {
	Status    string          `json:"status"`
	Version   string          `json:"version"`
	PID       int             `json:"pid"`
	Listen    string          `json:"listen"`
	Home      string          `json:"home"`
	Database  string          `json:"database"`
	StartedAt time.Time       `json:"started_at"`
	UptimeMS  int64           `json:"uptime_ms"`
	Counts    contract.Counts `json:"counts"`
	Agents    []Agent         `json:"agents"`
	Workflows []Workflow      `json:"workflows"`
	Plugins   []Plugin        `json:"plugins"`
	Problems  []string        `json:"problems"`
	// Workers are the runs in flight, with the age of their heartbeat.
	Workers []Worker `json:"workers"`
	// Store is the database file's health.
	Store StoreHealth `json:"store"`
	// Cluster lists the members when the daemon shares a PostgreSQL store
	// with others; absent on the embedded file.
	Cluster *contract.Cluster `json:"cluster,omitempty"`
	// Sandbox is whether runs are confined.
	Sandbox SandboxInfo `json:"sandbox"`
	// Processes is how everything a run starts ends with it.
	Processes ProcessControl `json:"processes"`
	// TLS is the certificate the API serves HTTPS with; absent on plain
	// HTTP.
	TLS *TLSInfo `json:"tls,omitempty"`
	// ListenFallback says why Listen is not the default address: the
	// daemon was given none and another process held the default when it
	// started. Absent when it listens where it was told or on the default.
	ListenFallback *ListenFallback `json:"listen_fallback,omitempty"`
}

// Message is one channel line as clients see it, the same shape the MCP
// tools return.
type Message = tools.Message

// DocumentInfo describes one document in GET /docs/{wf}/{tag}.
type DocumentInfo = tools.DocumentInfo

// Proposal is a team vote in GET /proposals/{wf}/{tag}, the same shape the
// team_proposal_* tools give agents.
type Proposal = tools.Proposal

// Vote is one member's current vote on a Proposal.
type Vote = tools.Vote

// Task is one task of a team's board in GET /tasks, the same shape the
// task_* tools give agents.
type Task = tools.Task

// TaskList is the body of GET /tasks: the board, oldest first.
type TaskList struct {
	Tasks []Task `json:"tasks"`
}

// TaskDetail is the body of GET /tasks/{id}: the task, the scope it
// belongs to and its history, oldest first.
type TaskDetail struct {
	Task    Task                 `json:"task"`
	Scope   string               `json:"scope"`
	History []contract.TaskEvent `json:"history"`
}

// SentMessage is the answer of POST /send: the message written and, when
// it will not be read soon (its workflow is stopped or paused, a
// recipient is paused or stopped), why and what lets it run. The message
// is kept either way.
type SentMessage struct {
	Message
	Warnings []string `json:"warnings,omitempty"`
}

// MessageList is the body of GET /peek.
type MessageList struct {
	Messages []Message `json:"messages"`
}

// DocumentList is the body of GET /docs/{wf}/{tag}.
type DocumentList struct {
	Documents []DocumentInfo `json:"documents"`
	// Owner is the workflow's documentOwner, the one agent (besides the
	// user) who may change documents; empty means every member may.
	Owner string `json:"owner,omitempty"`
}

// ProposalList is the body of GET /proposals/{wf}/{tag}: newest first.
type ProposalList struct {
	Proposals []Proposal `json:"proposals"`
}

// RunResult is the SSE `done` event of POST /run and the body of POST
// /serve.
type RunResult struct {
	RunID   string `json:"run_id"`
	Agent   string `json:"agent"`
	Content string `json:"content"`
	// Replies are what the agent wrote in its channel during the run, to
	// the team or to the asker (its result, when it said nothing itself):
	// the answer a user reads, where Content is the run's closing line.
	Replies    []Message      `json:"replies,omitempty"`
	Usage      contract.Usage `json:"usage"`
	DurationMS int64          `json:"duration_ms"`
}
