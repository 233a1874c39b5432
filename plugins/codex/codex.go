package codex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the codex plugin reports in its Info.
const Version = "0.1.0"

var install = "install it with `" + clis.Codex.Install + "`"

// Backend runs agents through the Codex CLI.
type Backend struct {
	// SessionsDir keeps Codex's threads between runs, one folder per
	// agent, so that the next run can resume them; "" means
	// agent-worker/codex in the user's cache directory. Losing it only
	// costs the conversation: the next run starts a new thread.
	SessionsDir string
	getenv      func(string) string
	heartbeat   time.Duration
	// exe is the binary whose GateHook answers the run's PreToolUse
	// hook; "" is the running executable (the plugin binary).
	exe string
}

var _ backend.Backend = (*Backend)(nil)

// New returns the codex backend as its plugin binary serves it.
func New() *Backend { return &Backend{getenv: os.Getenv, heartbeat: heartbeatEvery} }

// heartbeatEvery keeps the daemon's idle timer from firing while codex
// works quietly (a long command, a slow model): codex's own silence is
// judged by the timeout option.
const heartbeatEvery = 30 * time.Second

// Run builds the prompt from the daemon's data, runs codex on it (resuming
// the agent's thread when the daemon has one) and streams its events. A
// thread codex no longer knows is started afresh once.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	opts, err := parseOptions(req.Agent.Config)
	if err != nil {
		return backend.Permanent(fmt.Errorf("codex: %w", err))
	}
	path, err := cli.Find(opts.CLI, "codex", install)
	if err != nil {
		return err
	}
	prompt, err := worker.Prompt(ctx, req)
	if err != nil {
		return err
	}
	out := cli.NewSender(events)
	if err := out.Send(backend.Event{Kind: backend.EventLog, Text: prompt}); err != nil {
		return err
	}
	home, err := b.home(req, opts, out)
	if err != nil {
		return err
	}
	var refusals *gatehook.Reader
	if req.Daemon.URL != "" {
		gateFile, err := b.writeGate(req, home)
		if err != nil {
			return err
		}
		refusals = gatehook.NewReader(gateFile)
	}
	if prompt, err = argPrompt(prompt, req.WorkDir); err != nil {
		return err
	}
	cmd := cli.Command{Path: path, Dir: req.ProjectDir, IdleTimeout: time.Duration(opts.Timeout),
		Env: cli.Env("CODEX_HOME="+home, tokenEnv+"="+strings.TrimPrefix(req.Daemon.Headers["Authorization"], "Bearer "))}
	r := invocation{gated: refusals != nil, refusals: refusals, prompt: prompt}

	p, err := b.exec(ctx, cmd, r.with(req.ResumeSession), out)
	if err != nil && req.ResumeSession != "" && p.thread == "" && ctx.Err() == nil && out.Failed() == nil {
		if err := out.Send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf(
			"codex: could not resume thread %s (%v); starting a new thread", req.ResumeSession, err)}); err != nil {
			return err
		}
		p, err = b.exec(ctx, cmd, r.with(""), out)
	}
	if err != nil {
		return err
	}
	if p.answered {
		return out.Send(backend.Event{Kind: backend.EventResult, Text: p.answer})
	}
	return nil
}

// writableRepos are the paths of the workspace's repositories the run may
// write.
func writableRepos(repos []backend.Repo) []string {
	var dirs []string
	for _, r := range repos {
		if r.Write {
			dirs = append(dirs, r.Path)
		}
	}
	return dirs
}

// home writes the run's private CODEX_HOME and links the agent's kept
// threads into it.
func (b *Backend) home(req backend.Request, opts options, out *cli.Sender) (string, error) {
	if req.WorkDir == "" {
		return "", backend.Permanent(errors.New("codex: the run has no work directory for CODEX_HOME"))
	}
	cfg := homeConfig{Model: req.Agent.Model, System: req.Agent.System, Sandbox: opts.Sandbox,
		BaseURL: cmp.Or(opts.BaseURL, b.getenv("OPENAI_BASE_URL")), EnvKey: opts.EnvKey,
		Daemon: req.Daemon, Servers: req.MCPServers, WritableRoots: writableRepos(req.Repos), OTel: otelFromEnv(os.Getenv)}
	text, err := cfg.render()
	if err != nil {
		return "", backend.Permanent(fmt.Errorf("codex: %w", err))
	}
	home := filepath.Join(req.WorkDir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o600); err != nil {
		return "", err
	}
	if err := b.keepSessions(req, home); err != nil {
		// The run works without it; only the next one starts afresh.
		if err := out.Send(backend.Event{Kind: backend.EventLog, Text: "codex: threads will not be kept for the next run: " + err.Error()}); err != nil {
			return "", err
		}
	}
	return home, nil
}

// keepSessions points CODEX_HOME/sessions, where codex records threads, at
// the agent's state directory (which the daemon keeps across runs and
// removes with the agent), or else its folder under SessionsDir: the run's
// own directory is removed when the run ends.
func (b *Backend) keepSessions(req backend.Request, home string) error {
	a := req.Agent
	base := b.SessionsDir
	if req.StateDir != "" {
		base = req.StateDir
	} else if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		base = filepath.Join(cache, "agent-worker", "codex")
	}
	dir := filepath.Join(base, "threads", url.PathEscape(a.Workflow), url.PathEscape(a.Tag), url.PathEscape(a.Name))
	if req.StateDir != "" {
		dir = filepath.Join(base, "sessions")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	link := filepath.Join(home, "sessions")
	if target, err := os.Readlink(link); err == nil && target == dir {
		return nil
	}
	return os.Symlink(dir, link)
}

// maxArg keeps the prompt under Linux's limit on one argument (128 KiB).
const maxArg = 100 << 10

// argPrompt returns prompt, or, when it is too long for the command line
// (a big shared document, say), a short prompt that points codex at it in
// a file.
func argPrompt(prompt, dir string) (string, error) {
	if len(prompt) <= maxArg {
		return prompt, nil
	}
	file := filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(file, []byte(prompt), 0o600); err != nil {
		return "", err
	}
	return "Your prompt is too long for the command line: read " + file + " in full first and follow it.", nil
}

// invocation is what one codex command line runs.
type invocation struct {
	resume, prompt string
	// gated runs the hook of the run's hooks.json before each tool, and
	// refusals reads the calls it refused.
	gated    bool
	refusals *gatehook.Reader
}

// with is i resuming thread resume ("" for a new thread).
func (i invocation) with(resume string) invocation {
	i.resume = resume
	return i
}

// args is the codex command line: a new thread, or the next turn of
// thread resume. "--" keeps a prompt starting with "-" a prompt.
//
// A gated run enables hooks (stable and on by default in Codex 0.169.0;
// said so that a change of default cannot silently drop the gate) and
// passes --dangerously-bypass-hook-trust: Codex runs a hook only once
// its hash is trusted in the user's config, a step meant for a person
// reviewing hooks. Here it trusts the hooks Codex loads for this run:
// the run's private CODEX_HOME holds only the hooks.json the backend
// wrote, and a project's own .codex/hooks.json stays off, since a private
// CODEX_HOME trusts no project (checked with Codex 0.169.0). Hooks that
// a system or managed config adds, an administrator's, were not checked:
// the flag would run them too.
func (i invocation) args() []string {
	args := []string{"exec"}
	if i.resume != "" {
		args = append(args, "resume")
	}
	args = append(args, "--json", "--skip-git-repo-check", "--disable", "unbounded_connection_retries")
	if i.gated {
		args = append(args, "--enable", "hooks", "--dangerously-bypass-hook-trust")
	}
	args = append(args, "--")
	if i.resume != "" {
		args = append(args, i.resume)
	}
	return append(args, i.prompt)
}

// writeGate writes the run's gate file into its work dir and, into its
// CODEX_HOME, the hooks.json that runs this plugin's binary as a
// PreToolUse hook before every tool of Codex (GateHook). It returns the
// gate file's path.
func (b *Backend) writeGate(req backend.Request, home string) (string, error) {
	exe := b.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("codex: the gate hook needs the plugin's own path: %w", err)
		}
	}
	gate, err := gatehook.GateFile(req.Daemon, tokenEnv)
	if err != nil {
		return "", err
	}
	gateFile := filepath.Join(req.WorkDir, gateFileName)
	if err := os.WriteFile(gateFile, gate, 0o600); err != nil {
		return "", fmt.Errorf("codex: write the gate file: %w", err)
	}
	hooks, err := gatehook.HooksFile(gatehook.Command(exe, gateFile))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(home, "hooks.json"), hooks, 0o600); err != nil {
		return "", fmt.Errorf("codex: write hooks.json: %w", err)
	}
	return gateFile, nil
}

// exec runs codex once and judges the run by its events; the exit code
// only counts when they show no failure of their own. The calls the gate
// hook refused, which Codex's stream does not mention, are sent as gate
// events before the line that follows them and when codex exits.
func (b *Backend) exec(ctx context.Context, cmd cli.Command, in invocation, out *cli.Sender) (*parser, error) {
	p := newParser()
	refused := func() error {
		if in.refusals == nil {
			return nil
		}
		for _, reason := range in.refusals.Next() {
			if err := out.Send(backend.Event{Kind: backend.EventGate, Text: reason}); err != nil {
				return err
			}
		}
		return nil
	}
	cmd.Args = in.args()
	cmd.Stdout = func(line []byte) error {
		if err := refused(); err != nil {
			return err
		}
		for _, e := range p.parse(line) {
			if err := out.Send(e); err != nil {
				return err
			}
		}
		return nil
	}
	cmd.Stderr = func(line string) { _ = out.Send(backend.Event{Kind: backend.EventLog, Text: line}) }
	stopBeat := cli.Heartbeat(b.heartbeat, func(e backend.Event) { _ = out.Send(e) })
	runErr := cli.Run(ctx, cmd)
	stopBeat()
	if err := refused(); err != nil {
		return p, err
	}
	if ctx.Err() != nil {
		return p, ctx.Err()
	}
	if err := out.Failed(); err != nil {
		return p, err
	}
	err := p.outcome()
	if runErr != nil && (err == nil || p.failure == "") {
		err = classify(fmt.Errorf("codex: %w", runErr))
	}
	return p, err
}

// Status says whether the codex CLI is installed and which version, for
// `agent-worker backends`.
func Status(ctx context.Context) string { return cli.Status(ctx, "codex", clis.Codex.Install) }
