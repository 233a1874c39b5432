package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// cliDocStale is what the test that compares docs/cli.md with the tree says
// when they differ.
const cliDocStale = "docs/cli.md is stale: run make docs"

// cliDoc is docs/cli.md, the CLI reference: every command of the tree in
// --help's order with its usage, help and flags. It depends on nothing but
// the tree (the home's default is written as a rule, not this machine's
// path), so `make docs` writes the same file everywhere.
func cliDoc(root *ffcli.Command) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# agent-worker command reference\n\n")
	p("<!-- Generated from the command tree by `make docs` (agent-worker %s). Do not edit: change the commands' help instead. -->\n\n", docsCmdName)
	p("```\n%s\n```\n\n", root.ShortUsage)
	p("%s\n", markdown(root.LongHelp))
	if t := flagTable(root.FlagSet); t != "" {
		p("\n%s", t)
	}
	if ex := examplesMarkdown(""); ex != "" {
		p("\n%s", ex)
	}
	p("\nEvery command prints its help to stdout with `--help` (`agent-worker doc read --help`) or `agent-worker help` (`agent-worker help doc read`), ")
	p("and the shells complete commands, flags, agents and targets: see [completion](#agent-worker-completion).\n")

	p("\n## Commands\n\n")
	walkCommands(root, nil, func(path []string, c *ffcli.Command) {
		p("%s- [%s](#%s) — %s\n", strings.Repeat("  ", len(path)-1), strings.Join(path, " "), anchor(path), escapeMarkdown(c.ShortHelp))
	})
	walkCommands(root, nil, func(path []string, c *ffcli.Command) {
		p("\n## agent-worker %s\n\n", strings.Join(path, " "))
		if c.ShortHelp != "" {
			p("%s\n\n", sentence(escapeMarkdown(c.ShortHelp)))
		}
		p("```\n%s\n```\n", c.ShortUsage)
		if c.LongHelp != "" {
			p("\n%s\n", markdown(c.LongHelp))
		}
		if len(c.Subcommands) > 0 {
			var subs []string
			for _, s := range c.Subcommands {
				sp := append(append([]string(nil), path...), s.Name)
				subs = append(subs, fmt.Sprintf("[%s](#%s)", s.Name, anchor(sp)))
			}
			p("\nSubcommands: %s.\n", strings.Join(subs, ", "))
		}
		if t := flagTable(c.FlagSet); t != "" {
			p("\n%s", t)
		}
		if ex := examplesMarkdown(strings.Join(path, " ")); ex != "" {
			p("\n%s", ex)
		}
	})
	return b.String()
}

// examplesMarkdown is the examples of the command at path as a shell
// session, the way the help shows them.
func examplesMarkdown(path string) string {
	ex := examples[path]
	if len(ex) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Examples:\n\n```console\n")
	for _, e := range ex {
		for _, l := range strings.Split(e, "\n") {
			if strings.HasPrefix(l, "#") {
				fmt.Fprintf(&b, "%s\n", l)
			} else {
				fmt.Fprintf(&b, "$ %s\n", l)
			}
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// walkCommands calls fn for every command below c, depth first, in the
// tree's order, with its path of names.
func walkCommands(c *ffcli.Command, path []string, fn func(path []string, c *ffcli.Command)) {
	for _, s := range c.Subcommands {
		sp := append(append([]string(nil), path...), s.Name)
		fn(sp, s)
		walkCommands(s, sp, fn)
	}
}

// anchor is the id GitHub gives the heading of the command at path.
func anchor(path []string) string {
	return "agent-worker-" + strings.Join(path, "-")
}

// flagTable is a Markdown table of fs's flags, in name order.
func flagTable(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		if b.Len() == 0 {
			b.WriteString("| Flag | Default | Description |\n|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", flagSyntax(f), cell(flagDefault(f)), cell(escapeMarkdown(flagUsage(f))))
	})
	return b.String()
}

// flagDefault is how a flag's default reads in the reference: nothing for
// a zero value, and the home as the rule it follows, not as this machine's
// path.
func flagDefault(f *flag.Flag) string {
	switch d := flagDefaultText(f); {
	case d == "":
		return ""
	case f.Name == "home" && f.DefValue == api.DefaultHome():
		return "`$AGENT_WORKER_HOME`, else `~/.agent-worker`"
	default:
		return "`" + d + "`"
	}
}

// cell makes text safe in a table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// sentence begins s with a capital and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// markdown turns a LongHelp, written for a terminal, into Markdown: its
// lines flush left are prose, escaped; its indented lines (commands to
// type) become code blocks.
func markdown(help string) string {
	var out []string
	var code []string
	flush := func() {
		if len(code) == 0 {
			return
		}
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
		out = append(out, "```")
		out = append(out, dedent(code)...)
		out = append(out, "```", "")
		code = nil
	}
	for _, l := range strings.Split(strings.TrimSpace(help), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			flush()
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
		case l[0] == ' ' || l[0] == '\t':
			code = append(code, l)
		default:
			flush()
			out = append(out, escapeMarkdown(l))
		}
	}
	flush()
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// dedent removes the indent the lines share.
func dedent(lines []string) []string {
	n := -1
	for _, l := range lines {
		if i := len(l) - len(strings.TrimLeft(l, " \t")); n < 0 || i < n {
			n = i
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l[n:], " ")
	}
	return out
}

// escapeMarkdown keeps text outside `code spans` from being read as HTML
// (<file>) or emphasis (* *).
func escapeMarkdown(s string) string {
	var b strings.Builder
	inCode := false
	for _, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case inCode:
			b.WriteRune(r)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '*' || r == '\\' || r == '_':
			b.WriteRune('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
