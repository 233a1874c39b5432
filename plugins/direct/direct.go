package direct

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the sdk plugin reports in its Info.
const Version = "0.1.0"

const (
	defaultMaxSteps = 50
	// defaultMaxTokens is the Anthropic API's max_tokens, which it
	// requires; the OpenAI API gets one only from config, since its own
	// default suits both reasoning models and small local ones.
	defaultMaxTokens = 8192
	// maxRetries is how often the SDKs retry a request that failed with
	// 408, 409, 429 or 5xx (honouring retry-after) before the run fails
	// and the daemon's own backoff takes over.
	maxRetries       = 3
	defaultHeartbeat = 30 * time.Second
)

// Options adapt the backend to where it runs; the zero value is what the
// plugin binary uses.
type Options struct {
	// Env looks up API keys and base URLs; nil is os.Getenv. Tests pass
	// their own so that they can run in parallel.
	Env func(string) string
	// Heartbeat is how long a run may be silent (waiting on the model or a
	// tool) before it sends a heartbeat, so that the daemon's idle timeout
	// only catches runs that are really stuck; 0 is 30 s.
	Heartbeat time.Duration
}

// Backend runs agents on model APIs directly.
type Backend struct {
	env       func(string) string
	heartbeat time.Duration
}

var _ backend.Backend = (*Backend)(nil)

// New returns the sdk backend.
func New(o Options) *Backend {
	b := &Backend{env: o.Env, heartbeat: cmp.Or(o.Heartbeat, defaultHeartbeat)}
	if b.env == nil {
		b.env = os.Getenv
	}
	return b
}

// config is what the backend reads from an agent's config JSON; other
// backends' keys are ignored.
type config struct {
	MaxSteps   int                     `json:"max_steps"`
	MaxTokens  int64                   `json:"max_tokens"`
	Timeout    string                  `json:"timeout"`
	Provider   *providerConfig         `json:"provider"`
	Prices     map[string]price        `json:"prices"`
	Env        map[string]string       `json:"env"`
	MCPServers map[string]serverConfig `json:"mcp_servers"`
	// Tools are the workspace tool sets to offer; absent is all of them.
	Tools *[]string `json:"tools"`
	// MemoryTokens bounds the conversation memory; absent is the
	// default, 0 is none.
	MemoryTokens *int `json:"memory_tokens"`
	// Approvals gates run_shell commands that match its shell patterns:
	// a person approves each before it runs (approval_wait).
	Approvals *backend.ApprovalPolicy `json:"approvals"`

	toolSets []string // from Tools
	memory   int      // from MemoryTokens
}

type providerConfig struct {
	Name      string `json:"name"`
	BaseURL   string `json:"base_url"`
	APIKeyEnv string `json:"api_key_env"`
}

type serverConfig struct {
	Command []string          `json:"command"`
	URL     string            `json:"url"`
	Env     map[string]string `json:"env"`
	Headers map[string]string `json:"headers"`
}

func parseConfig(raw json.RawMessage) (config, time.Duration, error) {
	var c config
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, 0, fmt.Errorf("config: %w", err)
		}
	}
	if c.MaxSteps < 0 || c.MaxTokens < 0 {
		return c, 0, errors.New("config: max_steps and max_tokens cannot be negative")
	}
	c.MaxSteps = cmp.Or(c.MaxSteps, defaultMaxSteps)
	var err error
	if c.toolSets, err = parseToolSets(c.Tools); err != nil {
		return c, 0, err
	}
	if c.memory, err = memoryLimit(c.MemoryTokens); err != nil {
		return c, 0, err
	}
	var timeout time.Duration
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return c, 0, fmt.Errorf("config: timeout %q: write a duration such as 10m", c.Timeout)
		}
		timeout = d
	}
	return c, timeout, nil
}

// Run answers the agent's inbox with the model, as described in the
// package doc. Bad config, an unknown model or a missing API key are
// permanent errors, found before anything touches the network.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	cfg, timeout, err := parseConfig(req.Agent.Config)
	if err != nil {
		return backend.Permanent(fmt.Errorf("sdk: %w", err))
	}
	env := func(k string) string {
		if v, ok := cfg.Env[k]; ok {
			return v
		}
		return b.env(k)
	}
	m, err := resolve(req.Agent.Model, cfg.Provider, env)
	if err != nil {
		return backend.Permanent(fmt.Errorf("sdk: %w", err))
	}

	runCtx := ctx
	if timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(ctx, timeout)
		defer stop()
	}
	runCtx, cancel := context.WithCancel(runCtx)
	defer cancel()
	out := &sender{events: events, cancel: cancel, last: time.Now()}
	defer out.heartbeat(runCtx, b.heartbeat)()

	err = b.run(runCtx, req, cfg, m, out)
	switch {
	case err == nil:
		return nil
	case out.failed() != nil:
		return out.failed()
	case ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("sdk: the run took longer than its timeout of %v: %w", timeout, err)
	}
	return err
}

func (b *Backend) run(ctx context.Context, req backend.Request, cfg config, m model, out *sender) error {
	c, err := worker.Connect(ctx, req.Daemon)
	if err != nil {
		return err
	}
	defer c.Close()
	wc, err := worker.Fetch(ctx, c, req)
	if err != nil {
		return err
	}
	ws, err := b.workspace(req, cfg, out)
	if err != nil {
		if err := out.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("sdk: no workspace tools: %v", err)}); err != nil {
			return err
		}
	}
	tools, err := openTools(ctx, c, ownServers(req, cfg), req.ProjectDir, ws, out)
	if err != nil {
		return err
	}
	defer tools.close()

	var mem memory
	if cfg.memory > 0 {
		if mem, err = loadMemory(req.ResumeSession); err != nil {
			if err := out.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("sdk: starting without the saved conversation: %v", err)}); err != nil {
				return err
			}
		}
	}
	tr := transcript{prompt: worker.InboxText(wc)}
	chat := m.chat(req.Agent.System, mem.history(), worker.BuildPrompt(wc), tools.specs, cfg.MaxTokens)
	var usage backend.Usage
	var final string
	streamed := false // whether any text went out, to separate turns
	for step := 1; ; step++ {
		first, start := true, time.Now()
		reply, err := chat.send(ctx, func(delta string) error {
			if first && streamed {
				delta = "\n\n" + delta
			}
			first, streamed = false, true
			return out.send(backend.Event{Kind: backend.EventText, Text: delta})
		})
		if err != nil {
			return m.wrap(err)
		}
		usage.InputTokens += reply.in
		usage.OutputTokens += reply.out
		usage.CostUSD = cost(m, usage, cfg.Prices)
		if err := out.send(backend.Event{Kind: backend.EventUsage, Usage: withCall(usage, m, reply, start)}); err != nil {
			return err
		}
		final = reply.text
		tr.text(reply.text)
		if len(reply.calls) == 0 {
			break
		}
		results := make([]result, len(reply.calls))
		for i, call := range reply.calls {
			if results[i], err = tools.call(ctx, call, out); err != nil {
				return err
			}
			tr.tool(call, results[i])
		}
		chat.answer(results)
		if step >= cfg.MaxSteps {
			warning := fmt.Sprintf("\n\n[sdk: stopped after max_steps=%d model turns while the model was still calling tools; raise max_steps if the agent needs more]", cfg.MaxSteps)
			if err := out.send(backend.Event{Kind: backend.EventText, Text: warning}); err != nil {
				return err
			}
			break
		}
	}
	if cfg.memory > 0 {
		if err := remember(ctx, m, &mem, tr.exchange(), cfg, &usage, out); err != nil {
			return err
		}
		if err := out.send(backend.Event{Kind: backend.EventSession, SessionID: mem.encode()}); err != nil {
			return err
		}
	}
	return out.send(backend.Event{Kind: backend.EventResult, Text: final})
}

// workspace gives the run the workspace tools its config enables, in the
// directory the daemon chose for the agent and under its sandbox, whose
// refusals go out as sandbox events; nil when none are enabled.
func (b *Backend) workspace(req backend.Request, cfg config, out *sender) (*workspace, error) {
	if len(cfg.toolSets) == 0 {
		return nil, nil
	}
	var overrides []string
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		overrides = append(overrides, k+"="+cfg.Env[k])
	}
	w, err := newWorkspace(req.ProjectDir, cfg.toolSets, cli.Env(overrides...))
	if err != nil {
		return nil, err
	}
	w.policy = req.Sandbox
	w.repos = req.Repos
	w.report = func(line string) error { return out.send(backend.Event{Kind: backend.EventSandbox, Text: line}) }
	w.approvals = cfg.Approvals
	return w, nil
}

// ownServers are the agent's own MCP servers: those the daemon put in the
// request, or else those of its config, by name.
func ownServers(req backend.Request, cfg config) []backend.MCPServer {
	if len(req.MCPServers) > 0 {
		return req.MCPServers
	}
	var servers []backend.MCPServer
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		s := cfg.MCPServers[name]
		servers = append(servers, backend.MCPServer{Name: name, URL: s.URL, Headers: s.Headers, Command: s.Command, Env: s.Env})
	}
	return servers
}

// withCall is a copy of the run's usage so far for the usage event that
// ends one model call (the turn t, started at start): the daemon makes
// the call's chat span and metrics from it.
func withCall(u backend.Usage, m model, t turn, start time.Time) *backend.Usage {
	u.Call = &backend.ModelCall{Model: m.name, ResponseModel: t.model, Start: start, End: time.Now(), InputTokens: t.in, OutputTokens: t.out}
	if t.finish != "" {
		u.Call.FinishReasons = []string{t.finish}
	}
	return &u
}
