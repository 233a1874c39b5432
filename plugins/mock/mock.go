package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the mock plugin reports in its Info.
const Version = "0.1.0"

// Backend is the scripted mock backend.
type Backend struct {
	exit      func(code int) // os.Exit; tests replace it
	stderr    io.Writer
	heartbeat time.Duration
}

var _ backend.Backend = (*Backend)(nil)

// New returns the mock backend as its plugin binary serves it.
func New() *Backend {
	return &Backend{exit: os.Exit, stderr: os.Stderr, heartbeat: time.Second}
}

// Run follows the agent's script (or the default one) as the run's agent.
// A bad script is a permanent error: retrying cannot fix it.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	steps, configured, err := loadScript(req)
	if err != nil {
		return backend.Permanent(fmt.Errorf("mock: %w", err))
	}
	r := &run{b: b, daemon: req.Daemon, gate: worker.NewGate(req.Daemon), events: events, dir: req.ProjectDir, repos: req.Repos, policy: req.Sandbox}
	defer r.close()
	// A request with its context needs the daemon only for the steps that
	// act (a reply, a tool call); the others run without connecting.
	var c *worker.Client
	if req.RunContext == nil {
		if c, err = r.client(ctx); err != nil {
			return err
		}
	}
	wc, err := worker.Fetch(ctx, c, req)
	if err != nil {
		return err
	}
	if err := events.Send(backend.Event{Kind: backend.EventLog, Text: worker.BuildPrompt(wc)}); err != nil {
		return err
	}
	if !configured {
		steps = defaultScript(len(wc.Inbox) > 0)
	}
	attempt := max(req.Attempt, 1)
	r.vars = placeholders(wc, attempt, req)
	for _, s := range steps {
		if s.attempt != 0 && s.attempt != attempt || s.from != "" && !inboxFrom(wc.Inbox, s.from) ||
			s.contains != "" && !inboxHas(wc.Inbox, s.contains) {
			continue
		}
		if err := r.do(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// run is one run's state while it follows its script.
type run struct {
	b      *Backend
	daemon backend.MCPServer
	gate   *worker.Gate   // asked before each shell and write step
	c      *worker.Client // connected by the first step that needs it
	events backend.Events
	vars   *strings.Replacer
	dir    string // the project directory, where shell steps run
	// repos are the workspace's repositories, where a shell or write
	// step naming one (repo:) works instead.
	repos []backend.Repo
	// policy is the run's sandbox (zero: none): shell steps run under
	// its tool network, and what it refused them is explained.
	policy sandbox.Policy
	// results are the structured results of the run's tool steps by step
	// number, for {{last.FIELD}} and {{step.N.FIELD}}.
	results map[int]map[string]any
	last    int
}

func (r *run) send(e backend.Event) error { return r.events.Send(e) }

// client returns the run's connection to the daemon, opening it at the
// first call.
func (r *run) client(ctx context.Context) (*worker.Client, error) {
	if r.c == nil {
		c, err := worker.Connect(ctx, r.daemon)
		if err != nil {
			return nil, err
		}
		r.c = c
	}
	return r.c, nil
}

func (r *run) close() {
	if r.c != nil {
		r.c.Close()
	}
}

func (r *run) do(ctx context.Context, s step) error {
	text := r.fill(s.text)
	switch s.action {
	case "reply":
		c, err := r.client(ctx)
		if err != nil {
			return fmt.Errorf("mock: step %d: reply: %w", s.index, err)
		}
		if _, err := c.Send(ctx, text, s.to); err != nil {
			return fmt.Errorf("mock: step %d: reply: %w", s.index, err)
		}
	case "tool":
		return r.tool(ctx, s)
	case "sleep":
		return r.sleep(ctx, s.sleep)
	case "text":
		return r.send(backend.Event{Kind: backend.EventText, Text: text})
	case "result":
		return r.send(backend.Event{Kind: backend.EventResult, Text: text})
	case "usage":
		u := s.usage
		return r.send(backend.Event{Kind: backend.EventUsage, Usage: &u})
	case "session":
		return r.send(backend.Event{Kind: backend.EventSession, SessionID: text})
	case "fail":
		err := errors.New(text)
		if s.permanent {
			return backend.Permanent(err)
		}
		return err
	case "hang":
		if s.hang {
			<-ctx.Done()
			return fmt.Errorf("mock: step %d: hang: %w", s.index, ctx.Err())
		}
	case "crash":
		r.b.exit(s.n)
		return fmt.Errorf("mock: step %d: crash %d did not exit", s.index, s.n)
	case "flood":
		for i := range s.n {
			if i%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := r.send(backend.Event{Kind: backend.EventText, Text: strconv.Itoa(i) + " "}); err != nil {
				return err
			}
		}
	case "stderr":
		if _, err := fmt.Fprintln(r.b.stderr, text); err != nil {
			return fmt.Errorf("mock: step %d: stderr: %w", s.index, err)
		}
	case "shell", "write":
		repo, err := r.repo(s)
		if err != nil {
			return err
		}
		if s.action == "shell" {
			return r.shell(ctx, s.index, text, repo)
		}
		return r.write(ctx, s.index, text, r.fill(s.content), repo)
	case "spawn":
		// A child left running on purpose, like a CLI backend's model
		// process: the daemon must take it down with the plugin.
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("mock: step %d: spawn: %w", s.index, err)
		}
		go cmd.Wait()
		if err := r.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("spawned %s (pid %d)", s.argv[0], cmd.Process.Pid)}); err != nil {
			return err
		}
	}
	return nil
}

// repo is the workspace repository a shell or write step names: the
// project directory (writable) for none. A repository the run does not
// have ends the run: the script and the workflow disagree, and a retry
// cannot change that.
func (r *run) repo(s step) (backend.Repo, error) {
	if s.repo == "" {
		return backend.Repo{Path: r.dir, Write: true}, nil
	}
	name := r.fill(s.repo)
	if rp := backend.FindRepo(r.repos, name); rp != nil {
		return *rp, nil
	}
	if len(r.repos) == 0 {
		return backend.Repo{}, backend.Permanent(fmt.Errorf("mock: step %d: %s: repo %q is not in this workspace, which has no repositories", s.index, s.action, name))
	}
	names := make([]string, len(r.repos))
	for i, rp := range r.repos {
		names[i] = rp.Name
	}
	return backend.Repo{}, backend.Permanent(fmt.Errorf("mock: step %d: %s: repo %q is not in this workspace: use one of %s",
		s.index, s.action, name, strings.Join(names, ", ")))
}

// toolArgs are a shell or write step's tool call arguments, with the
// repository when it names one.
func toolArgs(args map[string]string, repo backend.Repo) json.RawMessage {
	if repo.Name != "" {
		args["repo"] = repo.Name
	}
	b, _ := json.Marshal(args)
	return b
}

// maxShellOutput bounds what a shell step reports, as a model's shell tool
// would cut a flood.
const maxShellOutput = 64 << 10

// shell runs line with sh -c in the project directory, or the step's
// repository (a read-only one too: the run's sandbox keeps it so), with
// the mock's own environment (the one the daemon gave the plugin), under
// the run's tool network, and sends what it printed as a text event
// (invalid UTF-8 replaced), then a sandbox event for each path or port
// the sandbox refused it. It dies with the run.
func (r *run) shell(ctx context.Context, index int, line string, repo backend.Repo) error {
	args := toolArgs(map[string]string{"command": line}, repo)
	call := backend.ToolCall{ID: "call_" + strconv.Itoa(index), Name: "shell", Args: args}
	if ok, err := r.ask(ctx, index, &call, tools.GateCall{Tool: call.Name, Command: line}); !ok || err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = repo.Path
	cmd.WaitDelay = time.Second
	out := &cappedBuffer{limit: maxShellOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := sandbox.RunTool(cmd, r.policy)
	var exit *exec.ExitError
	code := 0
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("mock: step %d: shell: %w", index, ctx.Err())
	case errors.As(err, &exit):
		out.WriteString("\n" + exit.String())
		code = exit.ExitCode()
	case err != nil:
		return fmt.Errorf("mock: step %d: shell: %w", index, err)
	}
	// A binary file or a cut rune must not break the event's string field.
	if err := r.send(backend.Event{Kind: backend.EventText, Text: strings.ToValidUTF8(out.String(), "\uFFFD")}); err != nil {
		return err
	}
	// The result says how the command ended (its output is the text
	// above); its exit status is the daemon's evidence. A signal is none.
	call.Result = fmt.Sprintf("exit status %d", code)
	call.IsError = code != 0
	if code >= 0 {
		call.Exit = &code
	} else {
		call.Result = exit.String()
	}
	r.keep(index, map[string]any{"exit": code})
	if err := r.send(backend.Event{Kind: backend.EventToolResult, Tool: &call}); err != nil {
		return err
	}
	if r.policy.IsZero() {
		return nil // unconfined: a refusal is not the sandbox's
	}
	for _, l := range sandbox.Explain(r.policy, true, repo.Path, out.String()) {
		if err := r.send(backend.Event{Kind: backend.EventSandbox, Text: l}); err != nil {
			return err
		}
	}
	return nil
}

// ask reports call as a tool_call event and puts it to the daemon's gate.
// A refused call is reported as the gate event with the reason and an
// error result, the step's {{last.error}} is the reason, and ok is false:
// the step does not run, the script goes on as a model would.
func (r *run) ask(ctx context.Context, index int, call *backend.ToolCall, gc tools.GateCall) (ok bool, err error) {
	sent := *call
	if err := r.send(backend.Event{Kind: backend.EventToolCall, Tool: &sent}); err != nil {
		return false, err
	}
	d := r.gate.Gate(ctx, gc)
	if d.Allowed {
		return true, nil
	}
	if err := r.send(backend.Event{Kind: backend.EventGate, Text: d.Reason}); err != nil {
		return false, err
	}
	call.Result, call.IsError = d.Reason, true
	r.keep(index, map[string]any{"error": d.Reason})
	return false, r.send(backend.Event{Kind: backend.EventToolResult, Tool: call})
}

// keep makes fields the step's result, for {{last.FIELD}} and
// {{step.N.FIELD}}.
func (r *run) keep(index int, fields map[string]any) {
	if r.results == nil {
		r.results = map[int]map[string]any{}
	}
	r.results[index], r.last = fields, index
}

// write writes content to path (relative to the project directory, or
// to the step's repository) as an agent's write_file tool would, once the
// daemon's gate allows it, and reports the call and its result. A failed
// write is an error result, and so is one to a read-only repository,
// refused as the sdk backend's write_file refuses it; the script goes on.
func (r *run) write(ctx context.Context, index int, path, content string, repo backend.Repo) error {
	args := toolArgs(map[string]string{"path": path, "content": content}, repo)
	call := backend.ToolCall{ID: "call_" + strconv.Itoa(index), Name: "write_file", Args: args}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(repo.Path, path)
	}
	if !repo.Write {
		sent := call
		if err := r.send(backend.Event{Kind: backend.EventToolCall, Tool: &sent}); err != nil {
			return err
		}
		refused := fmt.Sprintf("repository %s is read-only in this workspace: write_file cannot change it", repo.Name)
		call.Result, call.IsError = refused, true
		r.keep(index, map[string]any{"error": refused})
		return r.send(backend.Event{Kind: backend.EventToolResult, Tool: &call})
	}
	if ok, err := r.ask(ctx, index, &call, tools.GateCall{Tool: call.Name, Path: abs}); !ok || err != nil {
		return err
	}
	err := os.MkdirAll(filepath.Dir(abs), 0o755)
	if err == nil {
		err = os.WriteFile(abs, []byte(content), 0o644)
	}
	if err != nil {
		call.Result, call.IsError = err.Error(), true
		r.keep(index, map[string]any{"error": err.Error()})
	} else {
		call.Result = fmt.Sprintf("wrote %d bytes to %s", len(content), path)
		r.keep(index, map[string]any{"path": path})
	}
	return r.send(backend.Event{Kind: backend.EventToolResult, Tool: &call})
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest.
type cappedBuffer struct {
	strings.Builder
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Builder.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tool calls a daemon tool and reports the call and its result as events.
// A refusal is a result, not a failure: a model would read it and go on.
func (r *run) tool(ctx context.Context, s step) error {
	args, _ := expand(r.fill, s.args).(map[string]any)
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("mock: step %d: args: %w", s.index, err)
	}
	call := backend.ToolCall{ID: "call_" + strconv.Itoa(s.index), Name: s.text, Args: raw}
	sent := call
	if err := r.send(backend.Event{Kind: backend.EventToolCall, Tool: &sent}); err != nil {
		return err
	}
	c, err := r.client(ctx)
	if err != nil {
		return fmt.Errorf("mock: step %d: %w", s.index, err)
	}
	structured, text, err := c.Call(ctx, s.text, args)
	var refused *worker.ToolError
	switch {
	case errors.As(err, &refused):
		call.Result, call.IsError = refused.Message, true
		r.keep(s.index, map[string]any{"error": refused.Message})
	case err != nil:
		return fmt.Errorf("mock: step %d: %w", s.index, err)
	case text != "":
		call.Result = text
	default:
		call.Result = string(structured)
	}
	var fields map[string]any
	if err == nil && json.Unmarshal(structured, &fields) == nil {
		if r.results == nil {
			r.results = map[int]map[string]any{}
		}
		r.results[s.index], r.last = fields, s.index
	}
	return r.send(backend.Event{Kind: backend.EventToolResult, Tool: &call})
}

// sleep waits for d, sending a heartbeat every b.heartbeat so the daemon's
// idle timer sees the run alive.
func (r *run) sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(r.b.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-tick.C:
			if err := r.send(backend.Event{Kind: backend.EventHeartbeat}); err != nil {
				return err
			}
		}
	}
}

// inboxFrom reports whether any inbox message comes from sender, so a
// script can answer differently to different teammates.
func inboxFrom(inbox []worker.Message, sender string) bool {
	for _, m := range inbox {
		if m.From == sender {
			return true
		}
	}
	return false
}

// inboxHas reports whether any inbox message contains text.
func inboxHas(inbox []worker.Message, text string) bool {
	for _, m := range inbox {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}
