package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// hooksCmd is `hooks install|uninstall <agent> [--dir DIR]`: the Claude
// Code hooks that make a session started in DIR act as the agent.
func hooksCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("hooks", flag.ContinueOnError)
	return &ffcli.Command{
		Name:       "hooks",
		ShortUsage: "agent-worker hooks install|uninstall <agent> [--dir DIR]",
		ShortHelp:  "make a Claude Code session started in DIR act as an external agent (its project's .claude/settings.local.json)",
		FlagSet:    fs,
		Subcommands: []*ffcli.Command{
			hooksInstallCmd(e), hooksUninstallCmd(e),
		},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker hooks install|uninstall <agent> [--dir DIR]")
		},
	}
}

func hooksInstallCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("hooks install", flag.ContinueOnError)
	e.common(fs)
	dir := fs.String("dir", ".", "the project directory Claude Code runs in")
	return leaf("install", "hooks install <agent> [--dir DIR]",
		"write the hooks and the status line (merged with the settings there: the user's own hooks and status line stay) so Claude Code in DIR is <agent>", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			a, err := c.GetAgent(ctx, t)
			if err != nil {
				return err
			}
			if a.Backend != "external" {
				return api.Errorf(api.CodeConflict, "%s has backend %s, so the daemon runs it: hooks make a Claude Code session act as an agent with backend external (agent-worker new NAME --backend external)", a.Target, a.Backend)
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find this executable: %w", err)
			}
			home, err := filepath.Abs(e.home)
			if err != nil {
				return err
			}
			s, err := settingsIn(*dir)
			if err != nil {
				return err
			}
			path := s.path
			before, kept, err := s.install(exe, home, t)
			if err != nil {
				return err
			}
			ourLine := statusLineCommand(exe, home, t)
			if err := s.save(); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			if e.json {
				out := map[string]any{"agent": a.Target, "settings": path, "events": installedEvents, "replaced": before, "status_line": kept == ""}
				if kept != "" {
					out["kept_status_line"] = kept
				}
				return e.printJSON(out)
			}
			for _, who := range before {
				if who != t.String() {
					e.printf("replaced the hooks of %s\n", who)
				}
			}
			e.printf("hooks for %s in %s (%s)\n", a.Target, path, strings.Join(installedEvents, ", "))
			if kept != "" {
				e.printf("kept your own status line (%s); for the effort and phase of %s in it, run: %s\n", kept, a.Target, ourLine)
			} else {
				e.printf("status line: the effort and phase of %s, and its unread messages\n", a.Target)
			}
			e.printf("a Claude Code session started in %s now acts as %s; for the team's tools give it the MCP config too:\n", filepath.Dir(filepath.Dir(path)), a.Target)
			e.printf("  agent-worker mcp-config %s > .mcp-agent-worker.json; claude --mcp-config .mcp-agent-worker.json\n", a.Target)
			return nil
		})
}

func hooksUninstallCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("hooks uninstall", flag.ContinueOnError)
	e.common(fs)
	dir := fs.String("dir", ".", "the project directory Claude Code runs in")
	return leaf("uninstall", "hooks uninstall <agent> [--dir DIR]",
		"remove exactly the hooks and status line `hooks install` wrote for <agent>; the settings' other hooks stay", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := parseAgentTarget(args[0]) // no daemon needed
			if err != nil {
				return err
			}
			s, err := settingsIn(*dir)
			if err != nil {
				return err
			}
			path := s.path
			n, err := s.uninstall(t.String())
			if err != nil {
				return err
			}
			if n == 0 {
				return api.Errorf(api.CodeNotFound, "%s holds no agent-worker hooks of %s: give the --dir they were installed in, or the agent its hook commands name (--agent …)", path, t.Display())
			}
			if err := s.save(); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			if e.json {
				return e.printJSON(map[string]any{"agent": t.Display(), "settings": path, "removed": n})
			}
			e.printf("removed %d hook(s) of %s from %s (and its status line, when it was ours)\n", n, t.Display(), path)
			return nil
		})
}

// settingsIn reads the Claude Code settings of the project directory dir
// that hooks install into.
func settingsIn(dir string) (*claudeSettings, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, usagef("--dir %s is not a directory", dir)
	}
	return loadSettings(settingsPath(abs))
}

// hookInput is the part of Claude Code's hook input (JSON on stdin) the
// daemon needs.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	StopHookActive bool            `json:"stop_hook_active"`
	TranscriptPath string          `json:"transcript_path"`
	Source         string          `json:"source"`                 // SessionStart
	Prompt         string          `json:"prompt"`                 // UserPromptSubmit
	ToolName       string          `json:"tool_name"`              // PostToolUse
	ToolInput      json.RawMessage `json:"tool_input"`             // PostToolUse
	ToolResponse   json.RawMessage `json:"tool_response"`          // PostToolUse
	LastAssistant  string          `json:"last_assistant_message"` // Stop
}

// hookCmd is `hook <event> --agent <target>`, what Claude Code runs. It
// must never break the session: whatever fails (no daemon, a slow one, bad
// input), it says why on stderr, prints nothing and exits 0, within
// --timeout. It never starts a daemon.
func hookCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	e.common(fs)
	agent := fs.String("agent", "", "the agent the session acts as")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the daemon before adding nothing")
	return leaf("hook", "hook <"+strings.Join(append([]string{api.HookPreToolUse}, api.HookEvents...), "|")+"> --agent <target>",
		"answer one Claude Code hook (Claude runs this; see `hooks install`)", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			hook := e.hook
			if args[0] == api.HookPreToolUse {
				hook = func(ctx context.Context, _, agent string, timeout time.Duration, stdin io.Reader) error {
					return e.preToolUse(ctx, agent, timeout, stdin)
				}
			}
			if err := hook(ctx, args[0], *agent, *timeout, os.Stdin); err != nil {
				fmt.Fprintf(e.stderr, "agent-worker hook %s: %v (nothing added)\n", args[0], err)
			}
			return nil
		})
}

func (e *env) hook(ctx context.Context, event, agent string, timeout time.Duration, stdin io.Reader) error {
	if !api.ValidHookEvent(event) {
		return fmt.Errorf("unknown event %q: want one of %v", event, api.HookEvents)
	}
	t, err := api.ParseAgentTarget(agent)
	if err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var in hookInput
	if err := json.NewDecoder(io.LimitReader(stdin, 4<<20)).Decode(&in); err != nil {
		return fmt.Errorf("read Claude's hook input: %w", err)
	}
	if in.HookEventName != "" && in.HookEventName != event {
		return fmt.Errorf("the hook input is for %s, not %s", in.HookEventName, event)
	}
	c, err := e.connect(ctx, false)
	if err != nil {
		return err
	}
	c.HTTP.Timeout = timeout
	d, err := c.Hook(ctx, t, in.call(event))
	if err != nil {
		return err
	}
	if out := hookOutput(event, d); out != nil {
		_, err = e.stdout.Write(append(out, '\n'))
	}
	return err
}

// Bounds on what a hook adds to Claude's context (Claude Code itself cuts
// hook output at 10,000 characters).
const (
	hookContextChars = 9000
	hookMessageChars = 1500
)

// hookOutput is the answer in Claude Code's hook output format: context
// for SessionStart, UserPromptSubmit and PostToolUse (nil when there is
// nothing new), a block decision for a Stop while messages wait, nothing
// for PreCompact (Claude shows the model nothing of it) and SessionEnd.
func hookOutput(event string, d api.HookDelivery) []byte {
	var v any
	switch event {
	case api.HookSessionStart:
		v = contextOutput(event, sessionContext(d))
	case api.HookUserPromptSubmit, api.HookPostToolUse:
		var parts []string
		budget := hookContextChars
		if len(d.Directives) > 0 {
			t := directivesText(d.Directives, budget/2)
			budget -= len(t)
			parts = append(parts, t)
		}
		if len(d.Messages) > 0 || d.Omitted > 0 {
			parts = append(parts, "New messages for you ("+d.Agent+") in the agent-worker team:\n"+messagesWithin(d, budget))
		}
		if len(parts) > 0 {
			v = contextOutput(event, strings.Join(parts, "\n\n"))
		}
	case api.HookStop:
		if d.Block {
			v = map[string]any{"decision": "block", "reason": "Messages for you (" + d.Agent +
				") arrived in the agent-worker team; answer them (channel_send) before you stop:\n" + messagesText(d)}
		}
	}
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// directivesText brings the effort's directive files into the session,
// within budget characters; a file that does not fit is named, to be read.
func directivesText(ds []api.SessionDirective, budget int) string {
	var b strings.Builder
	b.WriteString("Directives of your effort for the directories you are working in (follow them):")
	for _, d := range ds {
		body := strings.TrimSpace(d.Content)
		if b.Len()+len(d.Path)+len(body)+8 > budget {
			fmt.Fprintf(&b, "\n### %s\n(too long to show here: read the file)", d.Path)
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n%s", d.Path, body)
	}
	return b.String()
}

func contextOutput(event, text string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text}}
}

// sessionContext tells a new session who it is: the agent, its team, its
// role and what waits for it.
func sessionContext(d api.HookDelivery) string {
	var b strings.Builder
	scope := api.Target{Workflow: d.Workflow, Tag: d.Tag}.Display()
	fmt.Fprintf(&b, "In this session you are %s, a member of the agent-worker team %s.", d.Agent, scope)
	var mates []string
	for _, m := range d.Members {
		if (api.Target{Agent: m.Name, Workflow: d.Workflow, Tag: d.Tag}).Display() != d.Agent {
			mates = append(mates, m.Name+" ("+string(m.State)+")")
		}
	}
	if len(mates) > 0 {
		fmt.Fprintf(&b, " Teammates: %s.", strings.Join(mates, ", "))
	}
	b.WriteString(" Talk to the team with the agent-worker MCP tools (channel_send; an @name mention wakes a teammate) when this session has them. New messages for you are added to your context as they arrive.\n")
	if s := strings.TrimSpace(d.System); s != "" {
		fmt.Fprintf(&b, "Your role: %s\n", api.OneLine(s, 2000))
	}
	if d.Resume != "" {
		fmt.Fprintf(&b, "This session continues session %s: the daemon kept its place for you.\n%s\n", d.ResumeFrom, strings.TrimSpace(d.Resume))
	}
	if len(d.Directives) > 0 {
		b.WriteString(directivesText(d.Directives, max(hookContextChars-b.Len(), 0)/2) + "\n")
	}
	if len(d.Messages) == 0 && d.Omitted == 0 {
		b.WriteString("No unread messages.")
		return b.String()
	}
	b.WriteString("Unread messages for you:\n")
	b.WriteString(messagesWithin(d, max(hookContextChars-b.Len(), 1000)))
	return b.String()
}

// messagesText lists messages one per line, newest kept when they do not
// all fit, and counts what was left out.
func messagesText(d api.HookDelivery) string { return messagesWithin(d, hookContextChars) }

// messagesWithin is messagesText within budget characters.
func messagesWithin(d api.HookDelivery, budget int) string {
	lines := make([]string, 0, len(d.Messages))
	size, omitted := 0, d.Omitted
	for i := len(d.Messages) - 1; i >= 0; i-- {
		l := messageLine(d.Messages[i])
		if size+len(l) > budget {
			omitted += i + 1
			break
		}
		size += len(l) + 1
		lines = append(lines, l)
	}
	var b strings.Builder
	if omitted > 0 {
		fmt.Fprintf(&b, "(%d older message(s) not shown; read them with channel_read)\n", omitted)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i])
		if i > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func messageLine(m api.Message) string {
	from := m.From
	if m.To != "" {
		from += " → you (direct)"
	}
	content := m.Content
	if r := []rune(content); len(r) > hookMessageChars {
		content = string(r[:hookMessageChars]) + fmt.Sprintf("… (%d more characters; channel_read since_seq=%d)", len(r)-hookMessageChars, m.Seq-1)
	}
	return fmt.Sprintf("[#%d %s] %s", m.Seq, from, content)
}

// sessionText is an attached session on `info`.
func sessionText(s api.AttachedSession) string {
	stale := ""
	if s.Stale {
		stale = " (stale: the agent is idle until its next hook)"
	}
	return fmt.Sprintf("Claude Code %s in %s, since %s, last hook %s ago%s", s.ID, s.Cwd,
		s.AttachedAt.Local().Format(time.DateTime), time.Since(s.HeartbeatAt).Round(time.Second), stale)
}
