package cursor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Version is what the cursor plugin reports in its Info.
const Version = "0.1.0"

// install is how a user gets the CLI; a missing CLI fails the agent with it.
var install = "install it with `" + clis.Cursor.Install + "` and log in with `cursor-agent login` (or set CURSOR_API_KEY), or set the agent's config \"cli\" to its path"

// maxPromptArg keeps the prompt under Linux's limit for one argument
// (MAX_ARG_STRLEN, 128 KiB); a longer prompt goes through a file.
const maxPromptArg = 100_000

// Backend runs each agent run as one headless cursor-agent process.
type Backend struct{}

var _ backend.Backend = (*Backend)(nil)

// New returns the cursor backend as its plugin binary serves it.
func New() *Backend { return &Backend{} }

// Run builds the prompt from the daemon, writes the run's MCP config into
// a private workspace and runs cursor-agent there until it prints its
// result. It fails on a non-zero exit, an error result or no result at
// all; the daemon then retries, so the inbox is acked only on success.
func (b *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	cfg, err := parseConfig(req.Agent.Config)
	if err != nil {
		return err
	}
	path, err := cli.Find(cfg.CLI, "cursor-agent", install)
	if err != nil {
		return err
	}
	prompt, err := fetchPrompt(ctx, req)
	if err != nil {
		return err
	}
	ws, err := workspace(req, cfg)
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	if len(prompt) > maxPromptArg {
		file := filepath.Join(ws, "prompt.md")
		if err := os.WriteFile(file, []byte(prompt), 0o600); err != nil {
			return fmt.Errorf("cursor: write prompt: %w", err)
		}
		prompt = "Your instructions are too long for the command line. Read them from " + file + " and follow them."
	}

	out := cli.NewSender(events)
	started, err := run(ctx, path, cmdArgs(req, cfg, ws, prompt, req.ResumeSession), cfg, ws, out)
	if err != nil && req.ResumeSession != "" && !started && out.Failed() == nil && ctx.Err() == nil && !errors.Is(err, cli.ErrIdle) {
		// The chat is gone (cursor-agent keeps chats per machine and
		// working directory): a fresh one beats failing the agent forever.
		if err := out.Send(backend.Event{Kind: backend.EventLog,
			Text: fmt.Sprintf("resuming chat %s failed (%v); starting a new chat", req.ResumeSession, err)}); err != nil {
			return err
		}
		_, err = run(ctx, path, cmdArgs(req, cfg, ws, prompt, ""), cfg, ws, out)
	}
	return err
}

// run runs cursor-agent once and reports whether it printed any event.
func run(ctx context.Context, path string, args []string, cfg config, ws string, out *cli.Sender) (bool, error) {
	shown := slices.Clone(args)
	shown[len(shown)-1] = fmt.Sprintf("<prompt, %d bytes>", len(args[len(args)-1]))
	if err := out.Send(backend.Event{Kind: backend.EventLog, Text: "cursor-agent " + strings.Join(shown, " ") + "\n\n" + args[len(args)-1]}); err != nil {
		return false, err
	}
	var s stream
	err := cli.Run(ctx, cli.Command{
		Path: path, Args: args, Dir: ws, Env: env(cfg), IdleTimeout: cfg.Idle,
		Stdout: func(l []byte) error { return out.Send(s.parse(l)...) },
		Stderr: func(l string) { _ = out.Send(backend.Event{Kind: backend.EventLog, Text: l}) },
	})
	switch {
	case out.Failed() != nil:
		return s.started(), out.Failed()
	case ctx.Err() != nil:
		return s.started(), ctx.Err()
	case err != nil && s.failed():
		return true, fmt.Errorf("cursor: %w (%v)", s.err(), err)
	case err != nil:
		return s.started(), fmt.Errorf("cursor: %w", err)
	}
	if err := s.err(); err != nil {
		return s.started(), fmt.Errorf("cursor: %w", err)
	}
	return true, nil
}

// cmdArgs is the cursor-agent command line of a run: headless (-p) with
// stream-json events, tools allowed without prompts (--force, which also
// trusts the workspace), the MCP servers of the workspace's
// .cursor/mcp.json approved (--approve-mcps), then the agent's model, the
// chat to resume, the config's extra args and the prompt.
func cmdArgs(req backend.Request, cfg config, ws, prompt, resume string) []string {
	a := []string{"-p", "--output-format", "stream-json", "--force", "--approve-mcps", "--workspace", ws}
	if m := model(req.Agent.Model); m != "" {
		a = append(a, "--model", m)
	}
	if resume != "" {
		a = append(a, "--resume", resume)
	}
	a = append(a, cfg.Args...)
	return append(a, prompt)
}

// fetchPrompt reads the run's context from the daemon and renders it.
func fetchPrompt(ctx context.Context, req backend.Request) (string, error) {
	user, err := worker.Prompt(ctx, req)
	if err != nil {
		return "", err
	}
	return buildPrompt(req, user), nil
}

// buildPrompt is what cursor-agent is asked. It has no flag for a system
// prompt, so the agent's system prompt leads under "## System"; and since
// it runs in a private folder rather than the project, the prompt says
// where the project is.
func buildPrompt(req backend.Request, user string) string {
	var b strings.Builder
	if sys := strings.TrimSpace(req.Agent.System); sys != "" {
		b.WriteString("## System\n" + sys + "\n\n")
	}
	if req.ProjectDir != "" {
		fmt.Fprintf(&b, "## Where to work\nThe project is %s. Your current directory is a private folder of this run, not the project: "+
			"use absolute paths under the project, and cd into it in shell commands.\n\n", req.ProjectDir)
	}
	b.WriteString(user)
	return b.String()
}

// workspace makes the private folder cursor-agent runs in and writes its
// .cursor/mcp.json there; the project is never written to. cursor-agent
// keeps its chats by working directory, so the folder has the same path
// on every run of an agent (in its state directory) for --resume to find
// the chat; Run removes it afterwards.
func workspace(req backend.Request, cfg config) (string, error) {
	if req.WorkDir == "" {
		return "", backend.Permanent(errors.New("cursor: the request has no work dir"))
	}
	a := req.Agent
	// The agent's state directory is its own and the same on every run
	// (and inside its sandbox); an older daemon sends none.
	ws := filepath.Join(req.StateDir, "workspace")
	if req.StateDir == "" {
		ws = filepath.Join(filepath.Dir(req.WorkDir), "cursor-"+safe(a.Name)+"@"+safe(a.Workflow)+"."+safe(a.Tag))
	}
	data, err := mcpConfig(req, cfg)
	if err != nil {
		return "", fmt.Errorf("cursor: mcp config: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(ws, ".cursor"), 0o700); err != nil {
		return "", fmt.Errorf("cursor: workspace: %w", err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".cursor", "mcp.json"), data, 0o600); err != nil {
		os.RemoveAll(ws)
		return "", fmt.Errorf("cursor: workspace: %w", err)
	}
	return ws, nil
}

// safe keeps a name usable as one path element.
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, strings.ReplaceAll(s, "..", "__"))
}

// env is the plugin's environment plus the config's env, for the CLI.
func env(cfg config) []string {
	return cli.Env(cli.Pairs(cfg.Env)...)
}

// Status says whether the cursor-agent CLI is installed and which version, for
// `agent-worker backends`.
func Status(ctx context.Context) string { return cli.Status(ctx, "cursor-agent", clis.Cursor.Install) }
