package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the acp plugin reports in its Info.
const Version = "0.1.0"

// ProtocolVersion is the ACP version this client speaks.
const ProtocolVersion = acpsdk.ProtocolVersionNumber

// daemonServer is the daemon's name among the session's MCP servers.
const daemonServer = "agent-worker"

// cancelGrace is how long a cancelled agent has to end its turn after
// session/cancel before it is killed.
const cancelGrace = 5 * time.Second

// heartbeatEvery keeps the daemon's idle timer from killing a run whose
// agent is alive but quiet; its silence is bounded by the config's timeout.
const heartbeatEvery = 30 * time.Second

// Backend runs agents that speak ACP.
type Backend struct {
	heartbeat, grace time.Duration
	// preset is the command of a preset (NewPreset) where the agent's
	// config names none, install how to get it.
	preset  []string
	install string
	// configEnv is the preset CLI's config directory variable
	// (clis.CLI.ConfigEnv).
	configEnv string
	cli       clis.CLI // the preset's CLI (zero for acp itself)
}

var _ backend.Backend = (*Backend)(nil)

// New returns the acp backend as its plugin binary serves it.
func New() *Backend { return &Backend{heartbeat: heartbeatEvery, grace: cancelGrace} }

// errNotACP marks a command that did not answer initialize as an ACP agent.
var errNotACP = errors.New("not an ACP agent")

// Run starts the agent's command, speaks ACP with it for one prompt turn
// and stops it. A command that is missing, not an ACP agent or of another
// protocol version fails permanently, naming the command.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	cfg, err := parseConfig(req.Agent.Config, b.preset)
	if err != nil {
		return err
	}
	b.presetDefaults(&cfg)
	install := "install the agent, or name its path in config command"
	if b.install != "" && len(b.preset) > 0 && cfg.Command[0] == b.preset[0] {
		install = b.install + ", or name its path in config command"
	}
	path, err := cli.Find(cfg.Command[0], cfg.Command[0], install)
	if err != nil {
		return err
	}
	agentCfg, err := backend.ParseAgentConfig(req.Agent.Config)
	if err != nil {
		return backend.Permanent(fmt.Errorf("acp: config: %w", err))
	}
	prompt, err := worker.Prompt(ctx, req)
	if err != nil {
		return err
	}
	if req.Agent.System != "" {
		prompt = "## System\n" + req.Agent.System + "\n\n" + prompt
	}
	dir := cli.WorkDir(req)
	env := cli.Pairs(cfg.Env)
	if conf, err := b.configDir(req, cfg.Env); err != nil {
		return err
	} else if conf != "" {
		env = append(env, b.configEnv+"="+conf)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := cli.NewSender(backend.EventsFunc(func(e backend.Event) error {
		err := events.Send(e)
		if err != nil {
			cancel(err) // the daemon stopped listening: stop the agent
		}
		return err
	}))
	proc, err := cli.Start(cli.Command{Path: path, Args: cfg.Command[1:], Dir: dir, Env: cli.Env(env...),
		Stderr: func(l string) { _ = out.Send(backend.Event{Kind: backend.EventLog, Text: l}) }})
	if err != nil {
		return err
	}
	defer func() {
		grace := b.grace
		if ctx.Err() != nil {
			grace = 0 // a cancelled turn had its grace already
		}
		proc.Stop(grace)
	}()

	idle := time.AfterFunc(cfg.Idle, func() { cancel(fmt.Errorf("acp: %s sent nothing for %s", cfg.Command[0], cfg.Idle)) })
	defer idle.Stop()
	head := &headReader{r: proc.Stdout, alive: func() { idle.Reset(cfg.Idle) }}

	cl := &client{out: out, gate: worker.NewGate(req.Daemon), approvals: agentCfg.Approvals,
		roots: roots(dir, req.Repos), cancelled: ctx.Done(), alive: func() { idle.Reset(cfg.Idle) },
		tools: map[acpsdk.ToolCallId]*toolState{}}
	if req.Daemon.URL == "" {
		cl.gate = refuseAll{}
	}
	if agentCfg.Approvals != nil && req.Daemon.URL != "" {
		cl.approve = approvalWait(req.Daemon)
	}
	conn := acpsdk.NewClientSideConnection(cl, proc.Stdin, head)
	conn.SetLogger(slog.New(slog.DiscardHandler)) // what it could not read is in head

	stopBeat := cli.Heartbeat(b.heartbeat, func(e backend.Event) { _ = out.Send(e) })
	defer stopBeat()

	s := session{b: b, cfg: cfg, req: req, conn: conn, cl: cl, out: out, proc: proc, head: head, dir: dir, text: prompt}
	err = s.run(ctx)
	if ctx.Err() != nil && err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return ctx.Err()
	}
	return err
}

// session is one run's conversation with the agent.
type session struct {
	b    *Backend
	cfg  config
	req  backend.Request
	conn *acpsdk.ClientSideConnection
	cl   *client
	out  *cli.Sender
	proc *cli.Process
	head *headReader
	dir  string
	text string // the prompt
}

func (s *session) run(ctx context.Context) error {
	caps, err := s.initialize(ctx)
	if err != nil {
		return err
	}
	servers, err := s.mcpServers(caps)
	if err != nil {
		return err
	}
	id, err := s.open(ctx, caps, servers)
	if err != nil {
		return err
	}
	if err := s.out.Send(backend.Event{Kind: backend.EventSession, SessionID: string(id)}); err != nil {
		return err
	}
	s.cl.mu.Lock()
	if string(id) != s.req.ResumeSession {
		s.cl.cost = costs{baseKnown: true} // a new session starts at 0
	} else if usd, ok := baseOf(s.req.StateDir, string(id)); ok {
		s.cl.cost.base, s.cl.cost.baseKnown = usd, true
	}
	s.cl.mu.Unlock()
	return s.prompt(ctx, id)
}

// initialize asks the command to initialize within the config's
// init_timeout and checks the protocol version it answers.
func (s *session) initialize(ctx context.Context) (acpsdk.AgentCapabilities, error) {
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Init)
	defer cancel()
	resp, err := s.conn.Initialize(ictx, acpsdk.InitializeRequest{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      &acpsdk.Implementation{Name: "agent-worker", Version: Version},
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs: acpsdk.FileSystemCapabilities{ReadTextFile: s.cfg.fs(), WriteTextFile: s.cfg.fs()},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return acpsdk.AgentCapabilities{}, ctx.Err()
		}
		return acpsdk.AgentCapabilities{}, backend.Permanent(s.notACP(ictx, err))
	}
	if resp.ProtocolVersion != ProtocolVersion {
		return acpsdk.AgentCapabilities{}, backend.Permanent(fmt.Errorf("acp: %s speaks ACP protocol version %d; this backend speaks version %d",
			s.cfg.Command[0], resp.ProtocolVersion, ProtocolVersion))
	}
	if a := resp.AgentInfo; a != nil {
		if err := s.out.Send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("acp: %s %s (protocol %d)", a.Name, a.Version, resp.ProtocolVersion)}); err != nil {
			return acpsdk.AgentCapabilities{}, err
		}
	}
	return resp.AgentCapabilities, nil
}

// notACP is why initialize got no answer, naming the command and what it
// wrote instead.
func (s *session) notACP(ictx context.Context, err error) error {
	var why string
	exited := s.proc.Done()
	if ictx.Err() == nil {
		// A closed pipe: the command is likely exiting; let it.
		select {
		case <-exited:
		case <-time.After(time.Second):
		}
	}
	select {
	case <-exited:
		why = fmt.Sprintf("it exited before answering initialize (%v)", s.proc.Err())
	default:
		if ictx.Err() != nil {
			why = fmt.Sprintf("no answer to initialize within %s", s.cfg.Init)
		} else {
			why = fmt.Sprintf("initialize failed: %v", err)
		}
	}
	msg := fmt.Sprintf("acp: %s is %v: %s", strings.Join(s.cfg.Command, " "), errNotACP, why)
	if first := s.head.first(); first != "" {
		msg += fmt.Sprintf("; its first output: %q", first)
	} else {
		msg += "; it wrote nothing on stdout"
	}
	return errors.New(msg)
}

// mcpServers are the session's MCP servers: the daemon's, over HTTP with
// the run's token, when the agent takes HTTP servers and the config does
// not turn it off, and the agent's own.
func (s *session) mcpServers(caps acpsdk.AgentCapabilities) ([]acpsdk.McpServer, error) {
	servers := []acpsdk.McpServer{}
	own, err := cli.OwnServers(s.req, s.cfg.MCPServers)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(own))
	for name := range own {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == daemonServer {
			continue
		}
		o := own[name]
		if len(o.Command) > 0 {
			env := []acpsdk.EnvVariable{}
			for k, v := range o.Env {
				env = append(env, acpsdk.EnvVariable{Name: k, Value: v})
			}
			servers = append(servers, acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: name, Command: o.Command[0], Args: append([]string{}, o.Command[1:]...), Env: env}})
			continue
		}
		if !caps.McpCapabilities.Http {
			if err := s.log(fmt.Sprintf("acp: %s does not take HTTP MCP servers (mcpCapabilities.http); mcp server %s is not given to it", s.cfg.Command[0], name)); err != nil {
				return nil, err
			}
			continue
		}
		servers = append(servers, httpServer(name, o.URL, o.Headers))
	}
	if !s.cfg.mcp() || s.req.Daemon.URL == "" {
		return servers, nil
	}
	if !caps.McpCapabilities.Http {
		return servers, s.log(fmt.Sprintf("acp: %s does not take HTTP MCP servers (mcpCapabilities.http), so it runs without the daemon's tools (channel_send, my_inbox, …)", s.cfg.Command[0]))
	}
	return append([]acpsdk.McpServer{httpServer(daemonServer, s.req.Daemon.URL, s.req.Daemon.Headers)}, servers...), nil
}

func httpServer(name, url string, headers map[string]string) acpsdk.McpServer {
	hs := []acpsdk.HttpHeader{}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		hs = append(hs, acpsdk.HttpHeader{Name: k, Value: headers[k]})
	}
	return acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: name, Type: "http", Url: url, Headers: hs}}
}

// open loads the run's session when it has one and the agent can load
// sessions, else (or when loading fails) starts a new one.
func (s *session) open(ctx context.Context, caps acpsdk.AgentCapabilities, servers []acpsdk.McpServer) (acpsdk.SessionId, error) {
	if resume := s.req.ResumeSession; resume != "" {
		if !caps.LoadSession {
			if err := s.log(fmt.Sprintf("acp: %s cannot load sessions (agentCapabilities.loadSession); starting a new one instead of %s", s.cfg.Command[0], resume)); err != nil {
				return "", err
			}
		} else {
			s.cl.setReplaying(true)
			_, err := s.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(resume), Cwd: s.dir, McpServers: servers})
			s.cl.setReplaying(false)
			if err == nil {
				return acpsdk.SessionId(resume), nil
			}
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			if err := s.log(fmt.Sprintf("acp: %s could not load session %s (%v); starting a new one", s.cfg.Command[0], resume, err)); err != nil {
				return "", err
			}
		}
	}
	resp, err := s.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: s.dir, McpServers: servers})
	if err != nil {
		return "", s.failed("session/new", err)
	}
	return resp.SessionId, nil
}

// prompt runs the turn. When the run is cancelled the agent gets
// session/cancel and the grace period to end the turn; the deferred Stop
// kills it after.
func (s *session) prompt(ctx context.Context, id acpsdk.SessionId) error {
	type answer struct {
		resp acpsdk.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		// Not ctx: a cancelled run ends its turn with session/cancel.
		resp, err := s.conn.Prompt(context.WithoutCancel(ctx), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(s.text)}})
		done <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		_ = s.conn.Cancel(context.WithoutCancel(ctx), acpsdk.CancelNotification{SessionId: id})
		select {
		case <-done:
		case <-time.After(s.b.grace):
		case <-s.conn.Done():
		}
		return ctx.Err()
	}
	if a.err != nil {
		return s.failed("session/prompt", a.err)
	}
	if err := s.usage(id, promptUsage(a.resp)); err != nil {
		return err
	}
	switch a.resp.StopReason {
	case acpsdk.StopReasonRefusal:
		return fmt.Errorf("acp: %s refused the prompt", s.cfg.Command[0])
	case acpsdk.StopReasonCancelled:
		if !s.cl.wasRefused() {
			return fmt.Errorf("acp: %s cancelled the turn itself", s.cfg.Command[0])
		}
		// Refused, the agent aborted the turn: the run did what the gate
		// let it, and a retry would only ask again.
		if err := s.log(fmt.Sprintf("acp: %s ended the turn when a tool call was refused", s.cfg.Command[0])); err != nil {
			return err
		}
	case acpsdk.StopReasonMaxTokens, acpsdk.StopReasonMaxTurnRequests:
		if err := s.log(fmt.Sprintf("acp: %s ended the turn early: %s", s.cfg.Command[0], a.resp.StopReason)); err != nil {
			return err
		}
	}
	return s.out.Send(backend.Event{Kind: backend.EventResult, Text: s.cl.reply()})
}

// usage sends the run's usage: the turn's tokens as the prompt's answer
// gives them (promptUsage), and what the turn added to the session's cost as the
// agent's usage_update reports it; nothing when the agent says neither.
func (s *session) usage(id acpsdk.SessionId, tokens *backend.Usage) error {
	s.cl.mu.Lock()
	usd, costed := s.cl.cost.run()
	last := s.cl.cost.last
	s.cl.mu.Unlock()
	if costed {
		if err := keep(s.req.StateDir, string(id), last); err != nil {
			_ = s.log("acp: keep the session's cost: " + err.Error())
		}
	}
	if tokens == nil && !costed {
		return nil
	}
	var use backend.Usage
	if tokens != nil {
		use = *tokens
	}
	use.CostUSD = usd
	return s.out.Send(backend.Event{Kind: backend.EventUsage, Usage: &use})
}

// failed is a request's error, with the agent's exit and stderr when it
// died meanwhile.
func (s *session) failed(method string, err error) error {
	select {
	case <-s.proc.Done():
		return fmt.Errorf("acp: %s exited during %s: %v", s.cfg.Command[0], method, s.proc.Err())
	case <-s.conn.Done():
		return fmt.Errorf("acp: %s closed its stdout during %s", s.cfg.Command[0], method)
	default:
		return fmt.Errorf("acp: %s: %s: %w", s.cfg.Command[0], method, err)
	}
}

func (s *session) log(text string) error {
	return s.out.Send(backend.Event{Kind: backend.EventLog, Text: text})
}

// roots are the directories the agent's file requests may reach: the run's
// directory (writable) and the workspace's repositories as the workspace
// grants them.
func roots(dir string, repos []backend.Repo) []root {
	rs := []root{{path: dir, write: true}}
	for _, r := range repos {
		rs = append(rs, root{path: r.Path, write: r.Write})
	}
	return rs
}

// refuseAll is the gate of a run without a daemon: nothing is allowed.
type refuseAll struct{}

func (refuseAll) Gate(context.Context, tools.GateCall) tools.GateDecision {
	return tools.GateDecision{Reason: "no daemon to ask whether the call is allowed"}
}

// approvalWait asks the daemon for a person's approval (approval_wait),
// connecting once per question.
func approvalWait(daemon backend.MCPServer) approver {
	return func(ctx context.Context, action string) (string, error) {
		c, err := worker.Connect(ctx, daemon)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, _, err = c.Call(ctx, tools.ApprovalWait, map[string]any{"action": action})
		var te *worker.ToolError
		if errors.As(err, &te) {
			return te.Message, nil
		}
		return "", err
	}
}

// headReader passes the agent's stdout through, keeping its first bytes
// for the error of a command that is not an ACP agent.
type headReader struct {
	r     io.Reader
	alive func()

	// mu guards the field that follows.
	mu   sync.Mutex
	head []byte
}

// headMax is how much of the agent's first output an error quotes.
const headMax = 200

func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n > 0 {
		h.alive()
		h.mu.Lock()
		if len(h.head) < headMax {
			h.head = append(h.head, p[:min(n, headMax-len(h.head))]...)
		}
		h.mu.Unlock()
	}
	return n, err
}

func (h *headReader) first() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.head)
}
