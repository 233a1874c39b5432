package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// gater decides a tool call the way the daemon's gate does (worker.Gate).
type gater interface {
	Gate(ctx context.Context, call tools.GateCall) tools.GateDecision
}

// approver asks a person to approve action (approval_wait): "" when
// approved, else why not.
type approver func(ctx context.Context, action string) (denied string, err error)

// root is a directory the agent's file requests may reach.
type root struct {
	path  string
	write bool
}

// client is the ACP client side of one run: what the agent asks of us
// (permissions, files) and what it tells us (session updates), turned
// into the run's events.
type client struct {
	out       *cli.Sender
	gate      gater
	approve   approver // nil: nothing waits for a person
	approvals *backend.ApprovalPolicy
	roots     []root
	// cancelled is closed when the run is cancelled: a permission request
	// then gets the cancelled outcome, as the protocol asks.
	cancelled <-chan struct{}
	// alive is called on everything the agent sends (the idle timer).
	alive func()

	// mu guards the fields that follow.
	mu sync.Mutex
	// replaying is true while session/load replays the conversation:
	// its updates are not this run's.
	replaying bool
	cost      costs           // the session's cost (usage_update)
	text      strings.Builder // this turn's reply
	tools     map[acpsdk.ToolCallId]*toolState
	// refused is set once a permission request was refused: an agent
	// whose only way to refuse is to abort (codex-acp's "abort") then
	// ends its turn cancelled, which is the refusal's end, not a failure.
	refused bool
}

// toolState is what we know of one of the agent's tool calls.
type toolState struct {
	name     string
	args     json.RawMessage
	reported bool // its EventToolCall was sent
	done     bool // its EventToolResult was sent
}

var _ acpsdk.Client = (*client)(nil)

func (c *client) send(es ...backend.Event) error { return c.out.Send(es...) }

// wasRefused says whether a permission request of this turn was refused.
func (c *client) wasRefused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

func (c *client) setReplaying(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replaying = on
}

// reply is what the agent said in this turn.
func (c *client) reply() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text.String()
}

// SessionUpdate maps one update into the run's events: message chunks to
// text, tool calls to tool events as their status moves, plans to a log
// line, the session's cost to the run's (costs). Updates replayed by
// session/load are dropped.
func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.alive()
	u := n.Update
	c.mu.Lock()
	if u.UsageUpdate != nil {
		c.cost.report(u.UsageUpdate, c.replaying)
	}
	if c.replaying {
		c.mu.Unlock()
		return nil
	}
	var es []backend.Event
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil && t.Text != "" {
			c.text.WriteString(t.Text)
			es = append(es, backend.Event{Kind: backend.EventText, Text: t.Text})
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		st := c.tool(tc.ToolCallId)
		st.name = toolName(tc.Title, &tc.Kind)
		st.args = rawJSON(tc.RawInput)
		es = c.toolEvents(tc.ToolCallId, st, tc.Status, tc.Content, tc.RawOutput)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		st := c.tool(tu.ToolCallId)
		if tu.Title != nil || tu.Kind != nil {
			st.name = toolName(deref(tu.Title, st.name), tu.Kind)
		}
		if tu.RawInput != nil {
			st.args = rawJSON(tu.RawInput)
		}
		es = c.toolEvents(tu.ToolCallId, st, deref(tu.Status, ""), tu.Content, tu.RawOutput)
	case u.Plan != nil:
		var b strings.Builder
		b.WriteString("plan:")
		for _, e := range u.Plan.Entries {
			mark := " "
			switch e.Status {
			case acpsdk.PlanEntryStatusCompleted:
				mark = "x"
			case acpsdk.PlanEntryStatusInProgress:
				mark = "~"
			}
			fmt.Fprintf(&b, "\n[%s] %s", mark, e.Content)
		}
		es = append(es, backend.Event{Kind: backend.EventLog, Text: b.String()})
	}
	c.mu.Unlock()
	if len(es) == 0 {
		return nil
	}
	return c.send(es...)
}

// tool is the state of call id, made on first sight; under mu.
func (c *client) tool(id acpsdk.ToolCallId) *toolState {
	st, ok := c.tools[id]
	if !ok {
		st = &toolState{}
		c.tools[id] = st
	}
	return st
}

// toolEvents are the events a tool call's new status makes: its call
// once, then its result once it completed or failed; under mu.
func (c *client) toolEvents(id acpsdk.ToolCallId, st *toolState, status acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent, raw any) []backend.Event {
	var es []backend.Event
	if !st.reported && string(st.args) == "{}" && (status == "" || status == acpsdk.ToolCallStatusPending) {
		// Announced while its arguments still stream (claude-agent-acp
		// sends {} first, then an update with them): reported once they
		// arrive or it runs, so the run shows what was called with.
		return nil
	}
	if !st.reported {
		st.reported = true
		es = append(es, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: string(id), Name: st.name, Args: st.args}})
	}
	if st.done || (status != acpsdk.ToolCallStatusCompleted && status != acpsdk.ToolCallStatusFailed) {
		return es
	}
	st.done = true
	result := contentText(content)
	if result == "" && raw != nil {
		result = string(rawJSON(raw))
	}
	return append(es, backend.Event{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: string(id), Name: st.name,
		Args: st.args, Result: result, IsError: status == acpsdk.ToolCallStatusFailed}})
}

// RequestPermission answers the agent's question whether a tool call may
// run: the daemon's gate (the phase of the agent's effort) decides, then a
// person if the agent's approvals gate the call. Nothing is allowed that
// neither allowed: a refusal picks the agent's reject option, and a run
// being cancelled answers cancelled.
func (c *client) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.alive()
	select {
	case <-c.cancelled:
		return cancelledOutcome(), nil
	default:
	}
	call := gateCall(p.ToolCall)
	d := c.gate.Gate(ctx, call)
	if d.Allowed {
		if action := c.gated(call); action != "" && c.approve != nil {
			denied, err := c.approve(ctx, action)
			if err != nil {
				d = tools.GateDecision{Reason: fmt.Sprintf("not run: the approval of %s could not be asked for (%v)", action, err)}
			} else if denied != "" {
				d = tools.GateDecision{Reason: denied}
			}
		}
	}
	if d.Allowed {
		if o, ok := option(p.Options, acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways); ok {
			return selected(o), nil
		}
		d.Reason = "the agent offered no option to allow the call"
	}
	c.mu.Lock()
	c.refused = true
	c.mu.Unlock()
	if err := c.send(backend.Event{Kind: backend.EventGate, Text: fmt.Sprintf("%s: %s", call.Tool, d.Reason)}); err != nil {
		return acpsdk.RequestPermissionResponse{}, err
	}
	if o, ok := option(p.Options, acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways); ok {
		return selected(o), nil
	}
	// No reject option: cancelled is the only other answer that runs nothing.
	return cancelledOutcome(), nil
}

// gated is the action a person must approve before call runs under the
// agent's approvals ("" for none): a shell command matching a pattern,
// or a tool the policy names.
func (c *client) gated(call tools.GateCall) string {
	if c.approvals == nil {
		return ""
	}
	if call.Command != "" && c.approvals.GatesShell(call.Command) != "" {
		return call.Command
	}
	if c.approvals.Gates(call.Tool) {
		return strings.TrimSpace(call.Tool + " " + call.Path)
	}
	return ""
}

// ReadTextFile serves a file inside the run's directories.
func (c *client) ReadTextFile(_ context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	c.alive()
	path, err := c.resolve(p.Path, false)
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewInvalidParams(err.Error())
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		// The protocol's code for it: an agent tells a new file by it
		// (Gemini CLI's write_file reads the file first).
		return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: codeResourceNotFound, Message: "Resource not found", Data: err.Error()}
	}
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewInternalError(err.Error())
	}
	return acpsdk.ReadTextFileResponse{Content: lines(string(b), p.Line, p.Limit)}, nil
}

// WriteTextFile writes a file inside the run's writable directories, once
// the daemon's gate allows it (as it would the sdk backend's write_file).
func (c *client) WriteTextFile(ctx context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	c.alive()
	path, err := c.resolve(p.Path, true)
	if err != nil {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInvalidParams(err.Error())
	}
	if d := c.gate.Gate(ctx, tools.GateCall{Tool: "write_file", Path: path}); !d.Allowed {
		if err := c.send(backend.Event{Kind: backend.EventGate, Text: "write_file: " + d.Reason}); err != nil {
			return acpsdk.WriteTextFileResponse{}, err
		}
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInvalidRequest(d.Reason)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInternalError(err.Error())
	}
	if err := os.WriteFile(path, []byte(p.Content), 0o644); err != nil {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInternalError(err.Error())
	}
	return acpsdk.WriteTextFileResponse{}, nil
}

// codeResourceNotFound is ACP's error code for a file that is not there.
const codeResourceNotFound = -32002

// errOutside is a path the agent may not reach.
var errOutside = errors.New("outside the run's directories")

// resolve checks that path, absolute as the protocol requires, is inside
// one of the roots (writable ones for a write) once symlinks are followed
// as far as the path exists; it returns the cleaned path.
func (c *client) resolve(path string, write bool) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: the path must be absolute", path)
	}
	clean := filepath.Clean(path)
	real := realPath(clean)
	for _, r := range c.roots {
		if write && !r.write {
			continue
		}
		rr := realPath(r.path)
		if within(clean, r.path) && within(real, rr) {
			return clean, nil
		}
	}
	what := "read"
	if write {
		what = "written"
	}
	var dirs []string
	for _, r := range c.roots {
		if !write || r.write {
			dirs = append(dirs, r.path)
		}
	}
	return "", fmt.Errorf("%s is %w: only files in %s may be %s", path, errOutside, strings.Join(dirs, ", "), what)
}

// realPath is path with the symlinks of its longest existing prefix
// resolved, the rest appended as written.
func realPath(path string) string {
	rest := ""
	for p := path; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within says whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// The terminal methods are not offered (clientCapabilities.terminal is
// false): an agent runs its commands itself, inside the run's sandbox.

func (c *client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/create")
}

func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/kill")
}

func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound("terminal/output")
}

func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/release")
}

func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound("terminal/wait_for_exit")
}
