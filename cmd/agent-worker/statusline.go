package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// statusLineTimeout bounds the status line's question to a daemon that
// accepts the connection and does not answer: Claude Code runs the
// command after every turn, and a slow one holds the line up.
const statusLineTimeout = 300 * time.Millisecond

// statusLineInput is the part of Claude Code's status line input (JSON on
// stdin) used to find the agent when --agent is not given: the project's
// settings, where `hooks install` wrote it.
type statusLineInput struct {
	Cwd       string `json:"cwd"`
	Workspace struct {
		ProjectDir string `json:"project_dir"`
		CurrentDir string `json:"current_dir"`
	} `json:"workspace"`
}

// statuslineCmd is `statusline [--agent A]`, the status line command
// `hooks install` writes: one line with the agent's effort and phase and
// its unread count. It never fails Claude Code's status line: with no
// daemon, a slow one or no agent it prints nothing and exits 0.
func statuslineCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("statusline", flag.ContinueOnError)
	e.common(fs)
	agent := fs.String("agent", "", "the agent the session acts as (default: the one `hooks install` wrote into the project's settings)")
	timeout := fs.Duration("timeout", statusLineTimeout, "how long to wait for the daemon before printing nothing")
	return leaf("statusline", "statusline [--agent A] [--json]",
		"print the agent's effort and phase ([implement:P2], [2:implement:P3] for a directory's 2nd effort) and unread count, for Claude Code's status line", fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			if err := e.statusLine(ctx, *agent, *timeout, os.Stdin); err != nil {
				fmt.Fprintf(e.stderr, "agent-worker statusline: %v\n", err)
			}
			return nil
		})
}

func (e *env) statusLine(ctx context.Context, agent string, timeout time.Duration, stdin io.Reader) error {
	if agent == "" {
		var in statusLineInput
		_ = json.NewDecoder(io.LimitReader(stdin, 1<<20)).Decode(&in) // none: the current directory
		agent = agentInstalledIn(in.Workspace.ProjectDir, in.Workspace.CurrentDir, in.Cwd, ".")
		if agent == "" {
			return nil // no hooks of ours here: nothing to show
		}
	}
	t, err := api.ParseAgentTarget(agent)
	if err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := e.connect(ctx, false)
	if err != nil {
		return nil // no daemon: an empty line, at once
	}
	c.HTTP.Timeout = timeout
	s, err := c.StatusLine(ctx, t)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(s)
	}
	_, err = fmt.Fprintln(e.stdout, s.Text())
	return err
}

// agentInstalledIn is the agent whose hooks `hooks install` wrote into the
// settings of the first of dirs that has some, "" for none.
func agentInstalledIn(dirs ...string) string {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		s, err := loadSettings(settingsPath(d))
		if err != nil {
			continue
		}
		if _, agent, _ := s.statusLine(); agent != "" {
			return agent
		}
		for _, f := range s.hooks {
			if m := ourHook.FindSubmatch(f.Value); m != nil {
				return string(m[2])
			}
		}
	}
	return ""
}
