// Package backend is what a backend plugin implements: one Run per agent run,
// streaming events back to the daemon. A backend decides how to talk to a
// model (an API, a CLI, a script); the daemon decides when it runs.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// Backend runs one agent run. Run blocks until the run ends, sending events
// as they happen; returning nil means the run succeeded and its inbox may be
// acked. Run must stop promptly when ctx is cancelled.
type Backend interface {
	Run(ctx context.Context, req Request, events Events) error
}

// Func adapts a function to Backend, as http.HandlerFunc does.
type Func func(ctx context.Context, req Request, events Events) error

// Run calls f.
func (f Func) Run(ctx context.Context, req Request, events Events) error { return f(ctx, req, events) }

// Events receives a run's events in order. Send fails once the daemon has
// gone away or cancelled the run; a backend should then return.
type Events interface {
	Send(Event) error
}

// EventsFunc adapts a function to Events.
type EventsFunc func(Event) error

// Send calls f.
func (f EventsFunc) Send(e Event) error { return f(e) }

// Repo is one repository of a run's workspace: its name, where it is for
// this run (the agent's own worktree of a git one) and whether the run
// may write it (the run's sandbox grants it so).
type Repo struct {
	Name  string
	Path  string
	Write bool
}

// FindRepo is the repository of repos named name, or nil.
func FindRepo(repos []Repo, name string) *Repo {
	for i := range repos {
		if repos[i].Name == name {
			return &repos[i]
		}
	}
	return nil
}

// Request carries the run's identity and connection info, and what the run
// is shown when it starts (RunContext), so that the worker builds its own
// prompt without asking the daemon first; everything else it reads and does
// through the daemon's MCP server.
type Request struct {
	RunID   string
	Attempt int // 1 for the first try
	Agent   Agent
	// Daemon is the daemon's MCP server with a token scoped to this agent
	// and run.
	Daemon MCPServer
	// MCPServers are the agent's own MCP servers from its config.
	MCPServers []MCPServer
	// WorkDir is a private directory for this run (config files, scratch).
	WorkDir string
	// ProjectDir is where the agent works: the workflow's directory, or a
	// standalone agent's own workspace; the plugin process starts in it.
	ProjectDir string
	// Repos are the workspace's named repositories (workspace.repos), in
	// the file's order: the tools that take a path or run a command take
	// an optional repo naming one, and work in its directory.
	Repos []Repo
	// ResumeSession continues an earlier conversation ("" for a fresh one).
	ResumeSession string
	// StateDir is the agent's own directory for this backend, kept across
	// runs (a CLI's conversation files) and removed with the agent.
	StateDir string
	// Env is the agent's own environment (its `env:`). A plugin process
	// has it set, and its working directory moved to ProjectDir, before
	// the backend's Run is called, so a backend reads both the usual way
	// (os.Getenv, a child's inherited environment and directory).
	Env map[string]string
	// RunContext is what the daemon's tools would show the run at its
	// start (inbox, channel tail, notes.md, document list); nil from a
	// daemon that does not send it, when the worker fetches it
	// (worker.Fetch does either).
	RunContext *RunContext
	// Sandbox is what the run's processes may reach (zero: the run is not
	// confined). The sdk confines the plugin process to it before the
	// backend's Run, unless SandboxApplied says the daemon started the
	// process confined so already; a backend passes it to RunTool for the
	// commands of its shell tool and to Explain for what they were refused.
	Sandbox        sandbox.Policy
	SandboxApplied bool
	// ProcessKey is the secret the daemon started the plugin process with
	// (EnvProcessKey); the sdk serves a run only with it.
	ProcessKey string
}

// EnvProcessKey names the variable through which the daemon gives a
// plugin process its key. The sdk reads it when the process starts and
// removes it from the environment, so nothing the plugin starts sees it.
const EnvProcessKey = "AGENT_WORKER_PROCESS_KEY"

// EnvSubreaper, set to 1 by a daemon that cannot give the plugin process
// a cgroup of its own, makes the sdk's plugin process a child subreaper:
// what its children start and leave behind (a setsid daemon, a
// double-forked server) is reparented to it instead of to init, and it
// kills and reaps all of it before it exits.
const EnvSubreaper = "AGENT_WORKER_SUBREAPER"

// RunContext is a run's starting context as the daemon's tools return it.
type RunContext = tools.RunContext

// Agent is who is running.
type Agent struct {
	Name, Workflow, Tag string
	Model               string
	System              string
	// Config is the agent's configuration as a JSON object: the shared
	// keys (max_steps, timeout, env, mcp_servers, tools, provider) and the
	// backend's own. ParseAgentConfig reads it typed; a backend may also
	// decode just the keys it knows.
	Config json.RawMessage
}

// MCPServer is how to reach one MCP server: over HTTP (URL, with headers),
// or as a command speaking stdio.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
	Command []string
	Env     map[string]string
}

// EventKind says what an Event carries.
type EventKind string

// The kinds of events a run produces.
const (
	EventText       EventKind = "text"        // Text: a delta of the model's reply
	EventToolCall   EventKind = "tool_call"   // Tool: a call the model made
	EventToolResult EventKind = "tool_result" // Tool: its result
	EventUsage      EventKind = "usage"       // Usage: tokens and cost so far
	EventHeartbeat  EventKind = "heartbeat"   // nothing; proves the run is alive
	EventSession    EventKind = "session"     // SessionID: to resume the conversation later
	EventResult     EventKind = "result"      // Text: the run's final answer
	EventLog        EventKind = "log"         // Text: a line for the run's transcript (e.g. a CLI's stderr)
	EventSandbox    EventKind = "sandbox"     // Text: something the run's sandbox refused (sandbox.Explain)
	EventGate       EventKind = "gate"        // Text: why the daemon's gate refused a tool call (the phase's reason)
)

// Event is one thing that happened in a run. Any event resets the daemon's
// idle timer.
type Event struct {
	Kind      EventKind
	Text      string
	Tool      *ToolCall
	Usage     *Usage
	SessionID string
}

// ToolCall is a tool call and, in an EventToolResult, its outcome.
type ToolCall struct {
	ID      string
	Name    string
	Args    json.RawMessage
	Result  string
	IsError bool
	// Exit is a shell tool's exit status, in a tool result of a command
	// that ran to its end; nil for other tools, or when unknown. The
	// daemon takes it as evidence (issue 43): what the tool saw, not what
	// the model says.
	Exit *int `json:",omitempty"`
}

// Usage is what a run consumed.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	// Call is the one model call this usage event ends, for a backend
	// that calls the model itself (the sdk backend sends one usage event
	// per call); nil otherwise. The totals above stay the run's so far.
	// The daemon makes each call a chat span and a point of the
	// gen_ai.client.* metrics from it.
	Call *ModelCall `json:",omitempty"`
}

// ModelCall is one request to a model and its answer: what the daemon
// needs to trace it without seeing the conversation.
type ModelCall struct {
	// Model is the model asked for, as the API knows it; ResponseModel
	// the one that answered, as the answer names it ("" when it does not).
	Model, ResponseModel string
	Start, End           time.Time
	// InputTokens and OutputTokens are this call's alone.
	InputTokens, OutputTokens int64
	// FinishReasons say why the model stopped, one per choice, in the
	// API's own words (end_turn, tool_use, stop, tool_calls, length …).
	FinishReasons []string `json:",omitempty"`
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (a missing CLI, a bad API key,
// an invalid config); the daemon fails the agent at once instead of
// retrying with backoff. Errors are retryable unless marked.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err (or anything it wraps) was marked with
// Permanent; the mark survives the gRPC boundary.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
