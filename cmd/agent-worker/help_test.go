package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// runCLI runs the CLI in-process, as main does.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// --help, -h and `help <command…>` print the help to stdout and exit 0, so
// `agent-worker run --help | less` shows it.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args []string
		want []string
	}{
		"--help":                 {[]string{"run", "--help"}, []string{"USAGE\n  agent-worker run <workflow.yaml>", "EXAMPLES\n  $ agent-worker run "}},
		"-h":                     {[]string{"run", "-h"}, []string{"USAGE\n  agent-worker run <workflow.yaml>"}},
		"--help after arguments": {[]string{"run", "x.yaml", "--tag", "t", "--help"}, []string{"USAGE\n  agent-worker run <workflow.yaml>"}},
		"help run":               {[]string{"help", "run"}, []string{"USAGE\n  agent-worker run <workflow.yaml>", "--tag string"}},
		"help tasks show":        {[]string{"help", "tasks", "show"}, []string{"USAGE\n  agent-worker tasks show <id>", "$ agent-worker tasks show task-3"}},
		"subcommand --help":      {[]string{"tasks", "show", "--help"}, []string{"USAGE\n  agent-worker tasks show <id>"}},
		"third level":            {[]string{"worktree", "queue", "show", "-h"}, []string{"USAGE\n  agent-worker worktree queue show <id>"}},
		"a group":                {[]string{"help", "doc"}, []string{"COMMANDS\n  read:", "agent-worker help doc <command>"}},
		"root --help":            {[]string{"--help"}, []string{"AGENT COMMANDS\n  new:", "agent-worker help <command>", "Exit codes: 0 ok"}},
		"help":                   {[]string{"help"}, []string{"AGENT COMMANDS\n  new:", "HELP COMMANDS"}},
		"no command":             {nil, []string{"AGENT COMMANDS\n  new:"}},
		"help help":              {[]string{"help", "help"}, []string{"USAGE\n  agent-worker help [command [subcommand]]"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(tc.args...)
			if code != api.ExitOK || stderr != "" {
				t.Errorf("agent-worker %s: exit %d, stderr %q; want exit 0 and nothing on stderr", strings.Join(tc.args, " "), code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("agent-worker %s: stdout does not hold %q:\n%s", strings.Join(tc.args, " "), w, stdout)
				}
			}
		})
	}
}

// The help reads like gh's: flags written as they are typed, with the
// type of their value and their default.
func TestHelpLayout(t *testing.T) {
	t.Parallel()
	_, help, _ := runCLI("run", "--help")
	for _, want := range []string{
		"Run a workflow until its team is idle",
		"\nUSAGE\n", "\nFLAGS\n", "\nCOMMON FLAGS\n", "\nEXAMPLES\n", "\nLEARN MORE\n",
		"  --tag string ", `(default "main")`,
		"  --timeout duration ",
		"  --json  ",
		"  --request-timeout duration ", "(default 1m0s)",
		"(default $AGENT_WORKER_HOME, else ~/.agent-worker)",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help does not hold %q:\n%s", want, help)
		}
	}
	for _, bad := range []string{"-tag=", "-json=false", "  -tag ", "--json bool"} {
		if strings.Contains(help, bad) {
			t.Errorf("run --help holds %q, Go's flag style, not the docs':\n%s", bad, help)
		}
	}
	if strings.Index(help, "FLAGS\n  --json") > strings.Index(help, "COMMON FLAGS") {
		t.Errorf("the command's own flags come after the common ones:\n%s", help)
	}
	_, runs, _ := runCLI("help", "runs")
	if !strings.Contains(runs, "  -n int ") || !strings.Contains(runs, "(default 20)") {
		t.Errorf("help runs: a one-letter flag is -n int with its default:\n%s", runs)
	}
	_, daemon, _ := runCLI("help", "daemon")
	if !strings.Contains(daemon, "--plugins-dir strings") || !strings.Contains(daemon, `--sandbox string `) {
		t.Errorf("help daemon: flags of their own types read as strings:\n%s", daemon)
	}
}

// A bad flag or a wrong number of arguments is said once on stderr, with
// the help to read, and no help dump.
func TestUsageErrorsOnce(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown flag":          {[]string{"run", "--nosuch"}, "agent-worker: unknown flag --nosuch\nrun `agent-worker run --help` for its flags and examples\n"},
		"misspelt flag":         {[]string{"run", "x.yaml", "--tga", "t"}, "agent-worker: unknown flag --tga: did you mean --tag?\nrun `agent-worker run --help` for its flags and examples\n"},
		"subcommand flag":       {[]string{"tasks", "show", "task-1", "--targte", "@x"}, "agent-worker: unknown flag --targte: did you mean --target?\nrun `agent-worker tasks show --help` for its flags and examples\n"},
		"bad value":             {[]string{"runs", "-n", "many"}, "agent-worker: invalid value \"many\" for flag -n: parse error\nrun `agent-worker runs --help` for its flags and examples\n"},
		"missing value":         {[]string{"run", "x.yaml", "--tag"}, "agent-worker: flag needs an argument: --tag\nrun `agent-worker run --help` for its flags and examples\n"},
		"missing argument":      {[]string{"info"}, "agent-worker: info takes 1 argument, got 0: usage: agent-worker info <target> [--json]\nrun `agent-worker info --help` for its flags and examples\n"},
		"extra argument":        {[]string{"list", "extra"}, "agent-worker: list takes no arguments, got 1: usage: agent-worker list [--json]\nrun `agent-worker list --help` for its flags and examples\n"},
		"unknown command":       {[]string{"frobnicate"}, "agent-worker: unknown command \"frobnicate\"\nrun `agent-worker help` for the commands and their examples\n"},
		"misspelt command":      {[]string{"stauts"}, "agent-worker: unknown command \"stauts\": did you mean \"status\"?\nrun `agent-worker help` for the commands and their examples\n"},
		"help nosuch":           {[]string{"help", "nosuch"}, "agent-worker: unknown command \"nosuch\"\nrun `agent-worker help` for the commands and their examples\n"},
		"help misspelt":         {[]string{"help", "tsks"}, "agent-worker: unknown command \"tsks\": did you mean \"tasks\"?\nrun `agent-worker help` for the commands and their examples\n"},
		"help misspelt sub":     {[]string{"help", "tasks", "shwo"}, "agent-worker: unknown command \"tasks shwo\": did you mean \"tasks show\"?\nrun `agent-worker tasks --help` for its flags and examples\n"},
		"version with argument": {[]string{"version", "now"}, "agent-worker: version takes no arguments, got 1: usage: agent-worker version [--json]\nrun `agent-worker version --help` for its flags and examples\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(tc.args...)
			if code != api.ExitUsage || stdout != "" || stderr != tc.want {
				t.Errorf("agent-worker %s: exit %d, stdout %q, stderr:\n%s\nwant exit %d, no stdout, stderr:\n%s",
					strings.Join(tc.args, " "), code, stdout, stderr, api.ExitUsage, tc.want)
			}
		})
	}
}

// Every command a user can run has at least one example in its help, and
// every example names a command of the tree.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	paths := map[string]bool{"": true}
	walkCommands(root, nil, func(path []string, c *ffcli.Command) {
		name := strings.Join(path, " ")
		paths[name] = true
		if n := len(examples[name]); len(c.Subcommands) == 0 && (n < 1 || n > 3) {
			t.Errorf("%q has %d examples in examples.go, want one to three", name, n)
		}
	})
	for name := range examples {
		if !paths[name] {
			t.Errorf("examples.go has examples for %q, which is no command", name)
		}
	}
}

// Every example is a real invocation: its command exists and takes the
// flags it is given.
func TestExamplesParse(t *testing.T) {
	t.Parallel()
	for name, exs := range examples {
		for _, ex := range exs {
			found := false
			for _, line := range strings.Split(ex, "\n") {
				if strings.HasPrefix(line, "#") {
					continue
				}
				words := exampleWords(line)
				if len(words) == 0 || words[0] != "agent-worker" {
					t.Errorf("%q: example %q does not run agent-worker", name, line)
					continue
				}
				root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
				c, path := selected(root, words[1:])
				// An example of a group or of the root may run a command below it.
				p := strings.Join(path, " ")
				found = found || p == name || strings.HasPrefix(p+" ", name+" ") || name == ""
				// A file the example names (--config daemon.yaml) is the user's.
				if err := root.Parse(words[1:]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%q: example %q: %v", name, line, err)
					continue
				}
				if _, _, err := interspersed(c.FlagSet, c.FlagSet.Args()); err != nil {
					t.Errorf("%q: example %q: %v", name, line, err)
				}
			}
			if !found {
				t.Errorf("%q: example %q does not run %q", name, ex, "agent-worker "+name)
			}
		}
	}
}

// exampleWords splits an example as sh would for what examples use: words,
// 'single' and "double" quotes, and a redirection or pipe that ends the
// command.
func exampleWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '>' || c == '|' || c == ';' || c == '&':
			i = len(line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// `agent-worker version` prints what --version prints; --json the same
// facts for a script.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	_, flagOut, _ := runCLI("--version")
	code, out, stderr := runCLI("version")
	if code != 0 || out != api.VersionText() || out != flagOut || stderr != "" {
		t.Errorf("version: exit %d, %q (stderr %q); want %q, as --version", code, out, stderr, flagOut)
	}
	code, out, _ = runCLI("version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version != api.Version || v.Go == "" {
		t.Errorf("version --json: exit %d, %q (%v); want the version %q", code, out, err, api.Version)
	}
}

func TestArgCount(t *testing.T) {
	t.Parallel()
	tests := map[[2]int]string{
		{0, 0}: "no arguments", {1, 1}: "1 argument", {2, 2}: "2 arguments", {0, 1}: "at most 1 argument",
		{1, -1}: "at least 1 argument", {1, 2}: "1 or 2 arguments", {1, 3}: "1 to 3 arguments",
	}
	for nargs, want := range tests {
		if got := argCount(nargs); got != want {
			t.Errorf("argCount(%v) = %q, want %q", nargs, got, want)
		}
	}
}
