package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

func sendCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	e.common(fs)
	to := fs.String("to", "", "send a direct message to this member only")
	return leaf("send", "send <target> <message> [--to NAME]", "write a message into a channel (an agent target gets an @mention)", fs, [2]int{2, 2},
		func(ctx context.Context, args []string) error {
			if _, err := parseTarget(args[0]); err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			m, err := c.Send(ctx, api.SendRequest{Target: args[0], Message: args[1], To: *to})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(m)
			}
			switch {
			case m.To != "":
				e.printf("#%d → %s (direct message)\n", m.Seq, m.To)
			case len(m.Mentions) > 0:
				e.printf("#%d → @%s\n", m.Seq, strings.Join(m.Mentions, " @"))
			default:
				e.printf("#%d → (no one mentioned)\n", m.Seq)
			}
			for _, w := range m.Warnings {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
			return nil
		})
}

func peekCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("peek", flag.ContinueOnError)
	e.common(fs)
	n := fs.Int("n", 10, "how many recent messages")
	follow := fs.Bool("follow", false, "keep printing new messages until Ctrl-C")
	return leaf("peek", "peek [target] [-n N] [--follow] [--json]",
		"show a channel: @wf:tag as you see it (direct messages marked), or an agent target as that agent sees it", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			target := "@" + api.GlobalWorkflow
			if len(args) == 1 {
				target = args[0]
			}
			if _, err := parseTarget(target); err != nil {
				return err
			}
			if *n < 1 || *n > 1000 {
				return usagef("-n must be between 1 and 1000")
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			if *follow {
				ctx, stop := interruptible(ctx)
				defer stop()
				return c.Follow(ctx, target, *n, api.FollowHandlers{
					Message: e.printMessage,
					Tool:    e.printTool,
					Run: func(kind string, r api.RunEventInfo) error {
						if e.json {
							return e.printNDJSON(map[string]any{"event": kind, "run": r})
						}
						switch kind {
						case "run_started":
							e.dimf("   ~ %s is working (%s, attempt %d)\n", r.Agent, r.RunID, r.Attempt)
						case "run_failed":
							e.dimf("   ~ %s's run failed: %s\n", r.Agent, r.Error)
						}
						return nil
					},
					State: func(st api.AgentStateEvent) error {
						if e.json {
							return e.printNDJSON(map[string]any{"event": "agent_state", "state": st})
						}
						if st.State == api.AgentFailed {
							e.dimf("   ~ %s failed: %s (agent-worker resume %s)\n", st.Agent, st.Error, st.Agent)
						}
						return nil
					},
				})
			}
			ms, err := c.Peek(ctx, target, *n, 0)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.MessageList{Messages: ms})
			}
			if len(ms) == 0 {
				e.printf("no messages\n")
			}
			for _, m := range ms {
				if err := e.printMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
}

// printTool shows a tool call, dimmed (NDJSON with --json).
func (e *env) printTool(t contract.ToolEvent) error {
	if e.json {
		return e.printNDJSON(map[string]any{"event": "tool", "tool": t})
	}
	e.dimf("   → %s: %s %s\n", t.Agent, t.Name, api.OneLine(t.Args, 100))
	return nil
}

// printNDJSON prints v as one line of JSON.
func (e *env) printNDJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

// dimf prints a secondary line, dimmed on a terminal.
func (e *env) dimf(format string, args ...any) {
	if f, ok := e.stdout.(*os.File); ok && isTerminal(f) {
		format = "\x1b[2m" + strings.TrimSuffix(format, "\n") + "\x1b[0m\n"
	}
	e.printf(format, args...)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printMessage prints one channel line: NDJSON with --json, else a readable
// line with direct messages and system lines marked.
func (e *env) printMessage(m api.Message) error {
	if e.json {
		return e.printNDJSON(m)
	}
	m.Content = strings.TrimRight(m.Content, "\n")
	switch {
	case m.Kind != "message":
		e.printf("#%d  ~ %s: %s\n", m.Seq, m.From, m.Content)
	case m.To != "":
		e.printf("#%d  [%s → %s, DM] %s\n", m.Seq, m.From, m.To, m.Content)
	default:
		e.printf("#%d  [%s] %s\n", m.Seq, m.From, m.Content)
	}
	return nil
}

func docCmd(e *env) *ffcli.Command {
	return &ffcli.Command{
		Name:       "doc",
		ShortUsage: "agent-worker doc read|write|append|list [target] [--file NAME] [content | --from PATH]",
		ShortHelp:  "read and change a team's shared documents",
		FlagSet:    flag.NewFlagSet("doc", flag.ContinueOnError),
		Options:    []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Subcommands: []*ffcli.Command{
			e.docSub("read", "read [target] [--file NAME]", "print a document", [2]int{0, 1}, false, e.docRead),
			e.docSub("write", "write [target] [--file NAME] <content | --from PATH>", "replace a document", [2]int{0, 2}, true,
				func(ctx context.Context, c *api.Client, scope api.Target, file string, args []string) error {
					if err := c.DocWrite(ctx, scope, docName(file), api.DocumentWrite{Content: args[0]}); err != nil {
						return err
					}
					return e.done("written", scope, docName(file))
				}),
			e.docSub("append", "append [target] [--file NAME] <content | --from PATH>", "add to the end of a document", [2]int{0, 2}, true,
				func(ctx context.Context, c *api.Client, scope api.Target, file string, args []string) error {
					if err := c.DocAppend(ctx, scope, docName(file), args[0]); err != nil {
						return err
					}
					return e.done("appended", scope, docName(file))
				}),
			e.docSub("list", "list [target]", "list documents", [2]int{0, 1}, false, e.docList),
		},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker doc read|write|append|list [target] (see agent-worker doc --help)")
		},
	}
}

// docExec is one doc subcommand's work, given the team's scope, the
// --file flag and, for write and append, the content as args[0].
type docExec func(ctx context.Context, c *api.Client, scope api.Target, file string, args []string) error

// docSub builds a doc subcommand: it reads the optional target (first) and,
// withContent, the content (last, or from --from), then connects and runs
// exec.
func (e *env) docSub(name, usage, help string, nargs [2]int, withContent bool, exec docExec) *ffcli.Command {
	fs := flag.NewFlagSet("doc "+name, flag.ContinueOnError)
	e.common(fs)
	file := fs.String("file", "", "document name (default notes.md)")
	from := new(string)
	if withContent {
		fs.StringVar(from, "from", "", "read the content from this file (- for stdin)")
	}
	return leaf(name, "doc "+usage, help, fs, nargs, func(ctx context.Context, args []string) error {
		// The target is optional and comes first; write/append take the
		// content last unless --from gives it.
		target := "@" + api.GlobalWorkflow
		takesTarget := len(args) == 2 || (len(args) == 1 && (!withContent || *from != ""))
		if takesTarget {
			target, args = args[0], args[1:]
		}
		t, err := parseTarget(target)
		if err != nil {
			return err
		}
		if withContent {
			content, err := readContent(args, *from)
			if err != nil {
				return err
			}
			args = []string{content}
		}
		c, err := e.connect(ctx, true)
		if err != nil {
			return err
		}
		return exec(ctx, c, api.Target{Workflow: t.Workflow, Tag: t.Tag}, *file, args)
	})
}

// docName is the document a --file flag names: notes.md when none.
func docName(f string) string {
	if f == "" {
		return "notes.md"
	}
	return f
}

// docRead is `doc read`: the document's text as it is, ending in a newline.
func (e *env) docRead(ctx context.Context, c *api.Client, scope api.Target, file string, _ []string) error {
	d, err := c.DocRead(ctx, scope, docName(file))
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(d)
	}
	if d.Content == "" {
		e.printf("(empty document)\n")
		return nil
	}
	_, err = io.WriteString(e.stdout, d.Content)
	if !strings.HasSuffix(d.Content, "\n") {
		e.printf("\n")
	}
	return err
}

// docList is `doc list`: the scope's documents with their sizes.
func (e *env) docList(ctx context.Context, c *api.Client, scope api.Target, _ string, _ []string) error {
	l, err := c.DocList(ctx, scope)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	if l.Owner != "" {
		e.printf("owner: %s (only %s may change documents)\n", l.Owner, l.Owner)
	}
	if len(l.Documents) == 0 {
		e.printf("no documents in %s\n", scope.Display())
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, d := range l.Documents {
		fmt.Fprintf(tw, "%s\t%d bytes\n", d.Path, d.Size)
	}
	return tw.Flush()
}

func proposalsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("proposals", flag.ContinueOnError)
	e.common(fs)
	active := fs.Bool("active", false, "only the proposals still open for votes")
	return leaf("proposals", "proposals <@wf[:tag]> [--active] [--json]",
		"show a team's proposals, newest first, with their options, votes and outcome", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := usageTarget(api.ParseScopeTarget(args[0], "proposals"))
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			ps, err := c.Proposals(ctx, t, *active)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.ProposalList{Proposals: ps})
			}
			if len(ps) == 0 {
				what := "proposals"
				if *active {
					what = "active proposals"
				}
				e.printf("no %s in %s\n", what, t.Display())
				return nil
			}
			for i, p := range ps {
				if i > 0 {
					e.printf("\n")
				}
				e.printProposal(p)
			}
			return nil
		})
}

// printProposal shows one proposal as a block: what it asks and how it is
// decided, the count per option, the outcome once closed, and each vote.
func (e *env) printProposal(p api.Proposal) {
	e.printf("%s  %s  %q\n", p.ID, p.State, p.Title)
	rule := fmt.Sprintf("  %s by %s, %s, %d of %d votes", p.Type, p.Creator, p.Resolution, len(p.Votes), p.Quorum)
	if p.Binding {
		rule += ", binding"
	}
	if p.State == "active" && !p.ExpiresAt.IsZero() {
		rule += ", expires " + p.ExpiresAt.Local().Format(time.DateTime)
	}
	e.printf("%s\n", rule)
	counts := map[string]int{}
	for _, v := range p.Votes {
		counts[v.Choice]++
	}
	opts := make([]string, 0, len(p.Options))
	for _, o := range p.Options {
		opts = append(opts, fmt.Sprintf("%s (%d)", o, counts[o]))
	}
	e.printf("  options: %s\n", strings.Join(opts, ", "))
	if p.Winner != "" {
		e.printf("  winner:  %s\n", p.Winner)
	}
	for _, v := range p.Votes {
		line := "  " + v.Voter + " → " + v.Choice
		if v.Reason != "" {
			line += " (" + api.OneLine(v.Reason, 200) + ")"
		}
		e.printf("%s\n", line)
	}
}

func (e *env) done(what string, scope api.Target, file string) error {
	if e.json {
		return e.printJSON(api.Status{Status: what, Target: scope.Display() + "/" + file})
	}
	e.printf("%s %s in %s\n", what, file, scope.Display())
	return nil
}

// readContent takes the content from the last argument or --from.
func readContent(args []string, from string) (string, error) {
	switch {
	case from != "" && len(args) > 0:
		return "", usagef("give the content as an argument or with --from, not both")
	case from == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), err
	case from != "":
		b, err := os.ReadFile(from)
		if err != nil {
			return "", usagef("read --from: %v", err)
		}
		return string(b), nil
	case len(args) == 1:
		return args[0], nil
	}
	return "", usagef("missing content: give it as the last argument or with --from FILE")
}

// trustNote tells the user of an outside MCP client how it comes to trust
// the daemon's certificate: a self-signed one's file is given to the
// client's runtime (node's, or Codex's own variable), a user's is trusted
// as its authority is.
func trustNote(t *api.TLSInfo, format string) string {
	if !t.SelfSigned {
		return "the daemon serves HTTPS with its certificate (sha256 " + t.Fingerprint + "), verified by the client's usual roots"
	}
	how := "NODE_EXTRA_CA_CERTS=" + t.CertFile + " in the environment of Claude Code (or Cursor)"
	if format == "codex" {
		how = "CODEX_CA_CERTIFICATE=" + t.CertFile + " in Codex's environment"
	}
	return "the daemon's certificate is self-signed (sha256 " + t.Fingerprint + "): trust it with " + how +
		" (on another machine, a copy of that file, checked against the fingerprint)"
}

func mcpConfigCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("mcp-config", flag.ContinueOnError)
	e.common(fs)
	format := fs.String("format", "claude", "claude (Claude Code --mcp-config), cursor (.cursor/mcp.json) or codex (config.toml)")
	return leaf("mcp-config", "mcp-config <agent> [--format claude|cursor|codex]",
		"print an MCP config so an outside agent (your Claude Code, Codex, Cursor) joins the team as <agent>", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			if *format != "claude" && *format != "cursor" && *format != "codex" {
				return usagef("unknown --format %q: use claude, cursor or codex", *format)
			}
			t, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			cfg, err := c.MCPConfig(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(cfg)
			}
			if cfg.TLS != nil && *format != "codex" {
				// The config itself must stay valid JSON: the note goes to stderr.
				fmt.Fprintf(e.stderr, "agent-worker: %s\n", trustNote(cfg.TLS, *format))
			}
			switch *format {
			case "codex":
				if cfg.TLS != nil {
					e.printf("# %s\n", trustNote(cfg.TLS, "codex"))
				}
				e.printf("# ~/.codex/config.toml — then: export AGENT_WORKER_TOKEN=%s\n", cfg.Token)
				e.printf("[mcp_servers.agent-worker]\nurl = %q\nbearer_token_env_var = \"AGENT_WORKER_TOKEN\"\ndefault_tools_approval_mode = \"approve\"\n", cfg.URL)
				return nil
			case "cursor":
				return e.printJSON(map[string]any{"mcpServers": map[string]any{"agent-worker": map[string]any{
					"url": cfg.URL, "headers": map[string]string{"Authorization": "Bearer " + cfg.Token}}}})
			}
			return e.printJSON(map[string]any{"mcpServers": map[string]any{"agent-worker": map[string]any{
				"type": "http", "url": cfg.URL, "headers": map[string]string{"Authorization": "Bearer " + cfg.Token}}}})
		})
}
