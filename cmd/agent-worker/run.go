package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

func askCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	e.common(fs)
	return leaf("ask", "ask <agent> <message> [--json]", "send an agent a message, run it, and stream its answer (Ctrl-C cancels)", fs, [2]int{2, 2},
		func(ctx context.Context, args []string) error {
			_, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			ctx, stop := interruptible(ctx)
			defer stop()
			var streamed strings.Builder
			res, err := c.Run(ctx, api.RunRequest{Agent: args[0], Message: args[1]}, api.RunHandlers{
				Chunk: func(ch api.RunChunk) {
					if !e.json {
						fmt.Fprint(e.stdout, ch.Text)
						streamed.WriteString(ch.Text)
					}
				},
				Tool: func(t api.RunTool) {
					if !e.json && !t.Done {
						fmt.Fprintf(e.stderr, "\x1b[2m→ %s %s\x1b[0m\n", t.Name, api.OneLine(string(t.Args), 120))
					}
				},
			})
			if streamed.Len() > 0 && !strings.HasSuffix(streamed.String(), "\n") {
				e.printf("\n")
			}
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			e.printAnswer(res, streamed.String())
			return nil
		})
}

// printAnswer shows what ask's run answered after its streamed text: the
// agent's replies in the channel (what it said to the team or to you),
// then the run's result, dimmed as a closing line, unless it is already on
// the screen (streamed, or posted as the one reply).
func (e *env) printAnswer(res api.RunResult, streamed string) {
	shown := strings.TrimSpace(streamed)
	for _, m := range res.Replies {
		_ = e.printMessage(m)
		if strings.TrimSpace(m.Content) == strings.TrimSpace(res.Content) {
			shown = strings.TrimSpace(res.Content)
		}
	}
	if result := strings.TrimSpace(res.Content); result != "" && result != shown {
		e.dimf("%s\n", strings.ReplaceAll(result, "\n", "\n  "))
	}
}

func serveCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	e.common(fs)
	text := fs.Bool("text", false, "print only the answer's text instead of the JSON response")
	return leaf("serve", "serve <agent> <message> [--text]",
		"send an agent a message, run it, and print the JSON response when done (ask streams instead)", fs, [2]int{2, 2},
		func(ctx context.Context, args []string) error {
			_, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			ctx, stop := interruptible(ctx)
			defer stop()
			res, err := c.Serve(ctx, api.RunRequest{Agent: args[0], Message: args[1]})
			if err != nil {
				return err
			}
			if *text && !e.json {
				e.printf("%s\n", res.Content)
				return nil
			}
			return e.printJSON(res)
		})
}

func pluginsCmd(e *env, name string) *ffcli.Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	e.common(fs)
	help := "list plugins found in the plugins directories, with versions and errors"
	if name == "backends" {
		help = "list backends (plugins) and whether the CLIs they drive are installed (same as plugins)"
	}
	wide := fs.Bool("wide", false, "one row per plugin with its full status, SHA-256 and path, however wide")
	return leaf(name, name+" [--wide] [--json]", help, fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			l, err := c.Plugins(ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(l)
			}
			if len(l.Plugins) == 0 {
				e.printf("no plugins found in %s\n", strings.Join(l.Dirs, ", "))
				return nil
			}
			if *wide {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tSHA256\tSTATUS\tSPARES\tPATH")
				for _, p := range l.Plugins {
					sha := p.SHA256
					if len(sha) > 12 {
						sha = sha[:12]
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Name, orNone(p.Version), sha, pluginStatus(p), spareSummary(p.Spares), p.Path)
				}
				return tw.Flush()
			}
			// Fits tableWidth: what does not fit the STATUS column goes on
			// its own indented lines under the row.
			var b strings.Builder
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tSPARES\tSTATUS")
			var details [][]string
			for _, p := range l.Plugins {
				head, rest := splitStatus(pluginStatus(p), statusWidth)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Name, orNone(p.Version), spareSummary(p.Spares), head)
				details = append(details, wrapWords(rest, tableWidth-4))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			rows := strings.SplitAfter(b.String(), "\n")
			e.printf("%s", rows[0])
			for i, d := range details {
				e.printf("%s", rows[i+1])
				for _, line := range d {
					e.printf("    %s\n", line)
				}
			}
			e.dimf("(--wide for each plugin's path and SHA-256)\n")
			return nil
		})
}

// tableWidth is the widest line a table of the CLI prints by default;
// statusWidth the most of a status shown in its column.
const (
	tableWidth  = 100
	statusWidth = 40
)

// pluginStatus is a plugin's STATUS: ok, shadowed, its error, or what it
// found (its CLI's version).
func pluginStatus(p api.Plugin) string {
	switch {
	case p.Error != "":
		return "error: " + p.Error
	case p.Shadowed:
		return "shadowed"
	case p.Status != "":
		return p.Status
	}
	return "ok"
}

// splitStatus cuts a status too long for its column: the head ("error",
// "missing", "claude 2.1.197 (Claude Code)") stays in the row, the rest
// (the reason, the install command, the path) goes on the lines below.
func splitStatus(s string, max int) (head, rest string) {
	if len(s) <= max {
		return s, ""
	}
	for _, sep := range []string{": ", " at "} {
		if i := strings.Index(s, sep); i > 0 && i <= max {
			return s[:i], strings.TrimPrefix(s[i+1:], " ")
		}
	}
	return "see below", s
}

// wrapWords breaks s at spaces into lines of at most width bytes; a word
// longer than width (a path) gets lines of its own, cut after a slash
// where it can be.
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	var words []string
	for _, w := range strings.Fields(s) {
		for len(w) > width {
			cut := strings.LastIndex(w[:width], "/") + 1
			if cut <= 1 {
				cut = width
			}
			words = append(words, w[:cut])
			w = w[cut:]
		}
		words = append(words, w)
	}
	for _, w := range words {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// spareSummary is a backend's warm spares in the plugins table: waiting
// now, runs that took one of those started, and runs that started cold.
func spareSummary(s *api.SpareStats) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%d live, %d/%d used, %d cold", s.Live, s.Used, s.Started, s.ColdStarts)
}
