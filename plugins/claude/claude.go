package claude

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the claude plugin reports in its Info.
const Version = "0.1.0"

// Install is how users get the CLI; errors and Status say it.
var Install = clis.Claude.Install

// heartbeatEvery keeps the daemon's idle timer (5 minutes by default) from
// killing a run whose CLI is alive but quiet; the CLI's own silence is
// bounded by the config's timeout instead.
const heartbeatEvery = 30 * time.Second

// Backend runs agents with Claude Code.
type Backend struct {
	heartbeat time.Duration
	// exe is the binary whose GateHook answers the run's PreToolUse
	// hook; "" is the running executable (the plugin binary).
	exe string
}

var _ backend.Backend = (*Backend)(nil)

// New returns the claude backend as its plugin binary serves it.
func New() *Backend { return &Backend{heartbeat: heartbeatEvery} }

// Run runs one `claude -p` over the agent's prompt. It fails permanently
// when the CLI is missing or the config is wrong, and retries once without
// --resume when the CLI does not know the session it was asked to resume.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	cfg, err := parseConfig(req.Agent.Config)
	if err != nil {
		return err
	}
	path, err := findCLI(cfg.CLI)
	if err != nil {
		return err
	}
	if req.WorkDir == "" {
		return backend.Permanent(errors.New("claude: the request has no work dir for the MCP config"))
	}
	prompt, err := worker.Prompt(ctx, req)
	if err != nil {
		return err
	}
	mcp, err := mcpConfig(req, cfg)
	if err != nil {
		return fmt.Errorf("claude: mcp config: %w", err)
	}
	in := invocation{prompt: prompt, model: req.Agent.Model, system: req.Agent.System,
		mcpConfig: filepath.Join(req.WorkDir, "mcp.json"), resume: req.ResumeSession,
		maxTurns: cfg.MaxSteps, allowedTools: cfg.AllowedTools, dirs: repoDirs(req.Repos)}
	// The file holds the run's token: private to the run, never in the project.
	if err := os.WriteFile(in.mcpConfig, mcp, 0o600); err != nil {
		return fmt.Errorf("claude: write mcp config: %w", err)
	}
	if req.Daemon.URL != "" {
		if in.settings, err = b.writeSettings(req.WorkDir, in.mcpConfig); err != nil {
			return err
		}
	}
	dir := cli.WorkDir(req)
	env := cli.Pairs(cfg.Env)
	env = append(env, telemetryEnv(cfg.Env, os.Getenv)...)
	confDir, err := cli.ConfigDir(req, cfg.Env, envConfigDir)
	if err != nil {
		return fmt.Errorf("claude: config dir: %w", err)
	}
	if confDir != "" {
		env = append(env, envConfigDir+"="+confDir)
	}
	c := cli.Command{Path: path, Dir: dir, Env: cli.Env(env...), IdleTimeout: cfg.Idle}

	err = b.run(ctx, c, in, events)
	if errors.Is(err, errStaleSession) {
		msg := fmt.Sprintf("claude could not resume session %s (%v); starting a new conversation", in.resume, err)
		if err := events.Send(backend.Event{Kind: backend.EventLog, Text: msg}); err != nil {
			return err
		}
		in.resume = ""
		err = b.run(ctx, c, in, events)
	}
	return err
}

// writeSettings writes the run's --settings file into its work dir: a
// PreToolUse hook on every tool that asks the daemon's gate (GateHook),
// so that the phase of the agent's effort decides Claude Code's own
// tools (Bash, Edit, Write…) too. The hook is this plugin's binary, which
// a confined run may execute.
func (b *Backend) writeSettings(workDir, mcpConfig string) (string, error) {
	exe := b.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("claude: the gate hook needs the plugin's own path: %w", err)
		}
	}
	body, err := gatehook.HooksFile(gatehook.Command(exe, mcpConfig))
	if err != nil {
		return "", err
	}
	path := filepath.Join(workDir, "settings.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return "", fmt.Errorf("claude: write settings: %w", err)
	}
	return path, nil
}

// telemetryEnv turns Claude Code's own OpenTelemetry export on when the
// daemon exports traces: the daemon then hands the run TRACEPARENT and
// the OTLP endpoint (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT and _PROTOCOL),
// and the CLI's metrics, events and (beta) spans go to the same collector.
// A variable the agent's env or the daemon's environment already sets is
// left as it is, so CLAUDE_CODE_ENABLE_TELEMETRY=0 in env: opts out.
func telemetryEnv(agentEnv map[string]string, getenv func(string) string) []string {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil
	}
	var out []string
	for _, kv := range [][2]string{{"CLAUDE_CODE_ENABLE_TELEMETRY", "1"}, {"CLAUDE_CODE_ENHANCED_TELEMETRY_BETA", "1"},
		{"OTEL_TRACES_EXPORTER", "otlp"}, {"OTEL_METRICS_EXPORTER", "otlp"}, {"OTEL_LOGS_EXPORTER", "otlp"}} {
		if _, set := agentEnv[kv[0]]; !set && getenv(kv[0]) == "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// envConfigDir is where Claude Code keeps its settings, logins and
// conversations (~/.claude unless set).
const envConfigDir = "CLAUDE_CONFIG_DIR"

// errStaleSession marks a resumed run that failed before the CLI started
// its conversation: the session is gone (another HOME, a cleaned
// ~/.claude) or was never claude's.
var errStaleSession = errors.New("stale session")

// run runs the CLI once and returns how it ended.
func (b *Backend) run(ctx context.Context, c cli.Command, in invocation, events backend.Events) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	send := func(e backend.Event) {
		if err := events.Send(e); err != nil {
			cancel(err) // the daemon stopped listening: stop the CLI
		}
	}
	s := newStream(events)
	c.Args = in.args()
	c.Stdout = s.line
	c.Stderr = func(l string) { send(backend.Event{Kind: backend.EventLog, Text: l}) }

	stopBeat := cli.Heartbeat(b.heartbeat, send)
	runErr := cli.Run(ctx, c)
	stopBeat()

	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	// The result line says why better than an exit status does.
	err := s.err()
	if errors.Is(err, errNoResult) && runErr != nil {
		err = fmt.Errorf("claude: %w", runErr) // with the end of stderr
	}
	if err != nil && in.resume != "" && !s.init {
		return fmt.Errorf("%w: %w", errStaleSession, err)
	}
	return err
}

// findCLI is the configured CLI or claude on PATH; a missing CLI is
// permanent and says how to install it.
func findCLI(configured string) (string, error) {
	return cli.Find(configured, "claude", "install it with `"+Install+"`")
}

// Status reports whether claude is on PATH and its version, for
// `agent-worker backends` (agents may still name another binary in their
// config). It takes at most a few seconds: the daemon asks while it
// fingerprints the plugin.
func Status(ctx context.Context) string { return cli.Status(ctx, "claude", Install) }

// repoDirs are the paths of the workspace's repositories, in order.
func repoDirs(repos []backend.Repo) []string {
	var dirs []string
	for _, r := range repos {
		dirs = append(dirs, r.Path)
	}
	return dirs
}
