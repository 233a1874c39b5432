package api

import (
	"encoding/json"
	"time"
)

// AgentSpec is the body of POST /agents: what a user decides about an agent.
type AgentSpec struct {
	Name         string          `json:"name"`
	Workflow     string          `json:"workflow,omitempty"`
	Tag          string          `json:"tag,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	Model        string          `json:"model,omitempty"`
	System       string          `json:"system,omitempty"`
	Schedule     string          `json:"schedule,omitempty"`
	WakeupPrompt string          `json:"wakeup_prompt,omitempty"`
	Config       json.RawMessage `json:"config,omitempty"`
}

// Agent is an agent as the daemon reports it: its spec plus what the daemon
// knows about it.
type Agent struct {
	Name         string          `json:"name"`
	Workflow     string          `json:"workflow"`
	Tag          string          `json:"tag"`
	Target       string          `json:"target"`
	Backend      string          `json:"backend"`
	Model        string          `json:"model,omitempty"`
	System       string          `json:"system,omitempty"`
	Schedule     string          `json:"schedule,omitempty"`
	WakeupPrompt string          `json:"wakeup_prompt,omitempty"`
	Config       json.RawMessage `json:"config,omitempty"`
	State        string          `json:"state"`
	Task         string          `json:"task,omitempty"`
	Error        string          `json:"error,omitempty"`
	InboxDepth   int             `json:"inbox_depth"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// AgentList is the body of GET /agents.
type AgentList struct {
	Agents []Agent `json:"agents"`
}

// Workflow is a workflow:tag instance and its members.
type Workflow struct {
	Name       string    `json:"name"`
	Tag        string    `json:"tag"`
	Target     string    `json:"target"`
	SourcePath string    `json:"source_path,omitempty"`
	State      string    `json:"state"`
	Error      string    `json:"error,omitempty"`
	Agents     []string  `json:"agents"`
	CreatedAt  time.Time `json:"created_at"`
}

// WorkflowList is the body of GET /workflows.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
}

// Health is the body of GET /health: everything `agent-worker status` shows,
// in one call.
type Health struct {
	Status    string     `json:"status"`
	Version   string     `json:"version"`
	PID       int        `json:"pid"`
	Listen    string     `json:"listen"`
	Home      string     `json:"home"`
	Database  string     `json:"database"`
	StartedAt time.Time  `json:"started_at"`
	UptimeMS  int64      `json:"uptime_ms"`
	Counts    Counts     `json:"counts"`
	Agents    []Agent    `json:"agents"`
	Workflows []Workflow `json:"workflows"`
	Problems  []string   `json:"problems"`
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

// Message is one channel line as clients see it.
type Message struct {
	Seq      int64  `json:"seq"`
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
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

// SendRequest is the body of POST /send: a human (sender "user") writes
// into a channel. An agent target gets an @mention prepended.
type SendRequest struct {
	Target  string `json:"target"`
	Message string `json:"message"`
	// To makes the message a DM to that member.
	To string `json:"to,omitempty"`
}

// MessageList is the body of GET /peek.
type MessageList struct {
	Messages []Message `json:"messages"`
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

// DocumentInfo describes one document in GET /docs/{wf}/{tag}.
type DocumentInfo struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DocumentList is the body of GET /docs/{wf}/{tag}.
type DocumentList struct {
	Documents []DocumentInfo `json:"documents"`
}

// MCPConfig is the body of POST /agents/{target}/mcp-config: what an outside
// MCP client needs to act as the agent.
type MCPConfig struct {
	Agent string `json:"agent"`
	URL   string `json:"url"`
	Token string `json:"token"`
}
