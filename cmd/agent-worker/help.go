package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/workflow"
)

// The help of every command, laid out like gh's: what it does, USAGE, its
// subcommands, FLAGS as the docs write them (--tag string), EXAMPLES and
// where to learn more. It goes to stdout, so `agent-worker run --help |
// less` shows it; mistakes go to stderr, once, with where the help is.

// helpError is a usage error whose fix is in the command's help (a wrong
// number of arguments): run prints it with the command's --help to read.
// hint, when set, replaces the line that says which help to read.
type helpError struct{ msg, hint string }

func (e helpError) Error() string { return e.msg }

// argCount is how a leaf says how many positional arguments it takes
// (nargs[1] < 0: no upper bound).
func argCount(nargs [2]int) string {
	n := func(k int) string {
		if k == 1 {
			return "1 argument"
		}
		return fmt.Sprintf("%d arguments", k)
	}
	switch lo, hi := nargs[0], nargs[1]; {
	case hi == 0:
		return "no arguments"
	case lo == hi:
		return n(lo)
	case hi < 0:
		return "at least " + n(lo)
	case lo == 0:
		return "at most " + n(hi)
	case hi == lo+1:
		return fmt.Sprintf("%d or %s", lo, n(hi))
	default:
		return fmt.Sprintf("%d to %s", lo, n(hi))
	}
}

// commandGroups sorts the root's commands in its help, the way a new user
// meets them. A command in no group is listed under MORE COMMANDS.
var commandGroups = []struct {
	title string
	names []string
}{
	{"AGENT COMMANDS", []string{"new", "list", "ls", "info", "send", "ask", "serve", "peek", "pause", "resume", "reset", "cancel", "schedule", "budget", "stop"}},
	{"WORKFLOW COMMANDS", []string{"run", "start", "workflows", "tasks", "doc", "proposals", "search", "worktree", "skills"}},
	{"RUN COMMANDS", []string{"runs", "logs"}},
	{"WHEN AGENTS NEED YOU", []string{"questions", "answer", "approve", "deny", "notifications", "notify"}},
	{"DAEMON COMMANDS", []string{"daemon", "status", "doctor", "console", "plugins", "backends", "backup"}},
	{"OUTSIDE AGENTS AND SHELLS", []string{"mcp-config", "hooks", "hook", "completion"}},
	{"HELP COMMANDS", []string{"help", "version"}},
}

// helpText is the help of c, the command at path (nil for the root).
func helpText(root, c *ffcli.Command, path []string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	section := func(title string) { p("\n%s\n", title) }
	if c.ShortHelp != "" {
		p("%s\n", sentence(c.ShortHelp))
	}
	if c.LongHelp != "" {
		if c.ShortHelp != "" {
			p("\n")
		}
		p("%s\n", strings.TrimSpace(c.LongHelp))
	}
	section("USAGE")
	p("  %s\n", c.ShortUsage)
	if c == root {
		b.WriteString(rootCommands(root))
	} else if len(c.Subcommands) > 0 {
		section("COMMANDS")
		b.WriteString(commandList(c.Subcommands, 0))
	}
	own, common := flagLines(c.FlagSet)
	if own != "" {
		section("FLAGS")
		b.WriteString(own)
	}
	if common != "" {
		section("COMMON FLAGS")
		b.WriteString(common)
	}
	if ex := examples[strings.Join(path, " ")]; len(ex) > 0 {
		section("EXAMPLES")
		for i, e := range ex {
			for _, l := range strings.Split(e, "\n") {
				if strings.HasPrefix(l, "#") {
					if i > 0 && !strings.HasSuffix(b.String(), "EXAMPLES\n") {
						p("\n")
					}
					p("  %s\n", l)
				} else {
					p("  $ %s\n", l)
				}
			}
		}
	}
	section("LEARN MORE")
	if len(c.Subcommands) > 0 {
		name := strings.Join(append(path, "<command>"), " ")
		p("  Use `agent-worker help %s` or `agent-worker %s --help` for more about a command.\n", name, name)
	}
	if c == root {
		p("  Every flag can also be set from the environment: --home ← AGENT_WORKER_HOME.\n")
	}
	p("  Read the guides in docs/ (start with docs/getting-started.md) and every command in docs/cli.md.\n")
	return b.String()
}

// rootCommands lists the root's commands in their groups.
func rootCommands(root *ffcli.Command) string {
	var b strings.Builder
	listed := map[string]bool{}
	w := 0 // one column for every group
	for _, s := range root.Subcommands {
		w = max(w, len(s.Name)+1)
	}
	for _, g := range commandGroups {
		var cs []*ffcli.Command
		for _, n := range g.names {
			if s := subcommand(root, n); s != nil {
				cs = append(cs, s)
				listed[n] = true
			}
		}
		if len(cs) > 0 {
			fmt.Fprintf(&b, "\n%s\n%s", g.title, commandList(cs, w))
		}
	}
	var more []*ffcli.Command
	for _, s := range root.Subcommands {
		if !listed[s.Name] {
			more = append(more, s)
		}
	}
	if len(more) > 0 {
		fmt.Fprintf(&b, "\nMORE COMMANDS\n%s", commandList(more, w))
	}
	return b.String()
}

// commandList is one line per command: its name and one-line help, the
// help aligned at w or after the longest name.
func commandList(cs []*ffcli.Command, w int) string {
	for _, c := range cs {
		w = max(w, len(c.Name)+1)
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, c.Name+":", c.ShortHelp)
	}
	return b.String()
}

// flagNameColumn is the widest flag name whose help starts on its line;
// a longer one has its help on the next line.
const flagNameColumn = 30

// commonFlags are the flags every client command has (env.common) but
// for --json: the help lists them after the command's own.
var commonFlags = map[string]bool{"home": true, "request-timeout": true}

// flagLines lists fs's flags in name order as the docs write them: --tag
// string, the help, and the default when it is not the zero value; the
// command's own flags, then the common ones.
func flagLines(fs *flag.FlagSet) (own, common string) {
	type line struct {
		name, help string
		common     bool
	}
	var lines []line
	w := 0
	fs.VisitAll(func(f *flag.Flag) {
		name := flagSyntax(f)
		help := flagUsage(f)
		if d := flagDefaultText(f); d != "" {
			if flagType(f) == "string" && !strings.HasPrefix(d, "$") {
				d = fmt.Sprintf("%q", d)
			}
			help += " (default " + d + ")"
		}
		lines = append(lines, line{name, help, commonFlags[f.Name]})
		if len(name) <= flagNameColumn {
			w = max(w, len(name))
		}
	})
	var o, c strings.Builder
	indent := strings.Repeat(" ", 2+w+3)
	for _, l := range lines {
		b := &o
		if l.common {
			b = &c
		}
		help := strings.ReplaceAll(l.help, "\n", "\n"+indent)
		if len(l.name) > w {
			fmt.Fprintf(b, "  %s\n%s%s\n", l.name, indent, help)
			continue
		}
		fmt.Fprintf(b, "  %-*s   %s\n", w, l.name, help)
	}
	return o.String(), c.String()
}

// flagSyntax is how a flag is typed: --tag string, --json, -n int.
func flagSyntax(f *flag.Flag) string {
	dash := "--"
	if len(f.Name) == 1 {
		dash = "-"
	}
	if t := flagType(f); t != "" {
		return dash + f.Name + " " + t
	}
	return dash + f.Name
}

// flagType names the value a flag takes: string, int, duration …, or ""
// for a bool. A flag of its own type (--sandbox, --after) takes a string,
// or strings when it may be repeated.
func flagType(f *flag.Flag) string {
	if isBoolFlag(f) {
		return ""
	}
	name, usage := flag.UnquoteUsage(f)
	if name == "value" {
		if strings.Contains(usage, "(repeatable)") {
			return "strings"
		}
		return "string"
	}
	return name
}

// flagUsage is a flag's help text without the backquotes that name its
// value.
func flagUsage(f *flag.Flag) string {
	_, usage := flag.UnquoteUsage(f)
	return usage
}

// flagDefaultText is a flag's default as the help and the reference write
// it: nothing for a zero value, and the home as the rule it follows, not
// as this machine's path.
func flagDefaultText(f *flag.Flag) string {
	switch d := f.DefValue; {
	case d == "" || d == "false" || d == "0" || d == "0s" || d == "[]":
		return ""
	case f.Name == "home" && d == api.DefaultHome():
		return "$AGENT_WORKER_HOME, else ~/.agent-worker"
	default:
		return d
	}
}

// selected is the command args name and its path, found the way ffcli
// finds it: a subcommand's name is the first word after its parent's
// flags.
func selected(root *ffcli.Command, args []string) (*ffcli.Command, []string) {
	c, path := root, []string(nil)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if f := c.FlagSet.Lookup(name); f != nil && !eq && !isBoolFlag(f) {
				i++
			}
			continue
		}
		s := subcommandFold(c, a)
		if s == nil {
			break
		}
		c, path = s, append(path, s.Name)
	}
	return c, path
}

// subcommandFold is the subcommand of c named name, ignoring case as
// ffcli does.
func subcommandFold(c *ffcli.Command, name string) *ffcli.Command {
	for _, s := range c.Subcommands {
		if strings.EqualFold(s.Name, name) {
			return s
		}
	}
	return nil
}

// helpHint is the line that follows a usage error: where the help is.
func helpHint(path []string) string {
	if len(path) == 0 {
		return "run `agent-worker help` for the commands and their examples"
	}
	return fmt.Sprintf("run `agent-worker %s --help` for its flags and examples", strings.Join(path, " "))
}

// flagRef matches a flag as the flag package writes it in an error (-tag),
// to write it as the help does (--tag).
var flagRef = regexp.MustCompile(`(: |for |flag )-([A-Za-z][A-Za-z0-9_-]+)`)

// flagMessage rewrites a flag parse error of c's flags in the help's words:
// "unknown flag --tags: did you mean --tag?" for Go's "flag provided but
// not defined: -tags".
func flagMessage(err error, c *ffcli.Command) string {
	s := strings.TrimPrefix(err.Error(), "error parsing commandline arguments: ")
	if name, ok := strings.CutPrefix(s, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		msg := "unknown flag " + dashed(name)
		var names []string
		c.FlagSet.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if best := closest(name, names); best != "" {
			msg += ": did you mean " + dashed(best) + "?"
		}
		return msg
	}
	return flagRef.ReplaceAllString(s, "$1--$2")
}

// dashed writes a flag's name as it is typed.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// closest is the candidate a typo of s most likely meant, or "" when none
// is close: workflow.Closest, the one "did you mean" of agent-worker, with
// case ignored as commands and flags are typed.
func closest(s string, candidates []string) string {
	return workflow.Closest(strings.ToLower(s), candidates)
}

// unknownCommand is the error for a command name c does not have, with
// the one the user most likely meant.
func unknownCommand(c *ffcli.Command, path []string, name string) error {
	var names []string
	for _, s := range c.Subcommands {
		names = append(names, s.Name)
	}
	msg := fmt.Sprintf("unknown command %q", strings.Join(append(slices.Clone(path), name), " "))
	if best := closest(name, names); best != "" {
		msg += fmt.Sprintf(": did you mean %q?", strings.Join(append(slices.Clone(path), best), " "))
	}
	return helpError{msg, helpHint(path)}
}

// helpCmd is `agent-worker help [command…]`: the help of that command on
// stdout, as --help prints it.
func helpCmd(e *env, root *ffcli.Command) *ffcli.Command {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	return leaf("help", "help [command [subcommand]]",
		"show the help of a command (the same as `agent-worker <command> --help`)", fs, [2]int{0, -1},
		func(_ context.Context, args []string) error {
			c, path := root, []string(nil)
			for _, a := range args {
				s := subcommandFold(c, a)
				if s == nil {
					return unknownCommand(c, path, a)
				}
				c, path = s, append(path, s.Name)
			}
			e.printf("%s", helpText(root, c, path))
			return nil
		})
}

// setHelp makes every command of the tree answer --help with helpText, and
// silences the flag package, which would print its errors and the whole
// help to stderr: run reports them once.
func setHelp(root *ffcli.Command) {
	var set func(c *ffcli.Command, path []string)
	set = func(c *ffcli.Command, path []string) {
		c.UsageFunc = func(c *ffcli.Command) string { return helpText(root, c, path) }
		c.FlagSet.SetOutput(io.Discard)
		for _, s := range c.Subcommands {
			set(s, append(slices.Clone(path), s.Name))
		}
	}
	set(root, nil)
}
