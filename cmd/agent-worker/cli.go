package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// envPrefix makes every flag settable from the environment:
// --plugins-dir ← AGENT_WORKER_PLUGINS_DIR.
const envPrefix = "AGENT_WORKER"

// usageError is a mistake in how a command was called (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// env is what every command needs: where to write and where the daemon lives.
type env struct {
	stdout, stderr io.Writer
	home           string
	json           bool
	timeout        time.Duration
}

// common registers the flags every client command shares.
func (e *env) common(fs *flag.FlagSet) {
	fs.StringVar(&e.home, "home", api.DefaultHome(), "agent-worker home (daemon.json, database, logs)")
	fs.BoolVar(&e.json, "json", false, "print JSON instead of text")
	fs.DurationVar(&e.timeout, "request-timeout", api.DefaultTimeout, "how long to wait for the daemon's answer (streams and runs wait as long as they take)")
}

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) printf(format string, args ...any) { fmt.Fprintf(e.stdout, format, args...) }

// leaf builds a client command: flags from the environment, interspersed
// flags after positional arguments (`new alice --backend mock`), and
// exactly the given number of positional arguments.
func leaf(name, usage, help string, fs *flag.FlagSet, nargs [2]int, exec func(ctx context.Context, args []string) error) *ffcli.Command {
	return leafRest(name, usage, help, fs, nargs, func(ctx context.Context, args, rest []string) error {
		if len(rest) > 0 {
			return usagef("%s: unexpected arguments after --: %s", name, strings.Join(rest, " "))
		}
		return exec(ctx, args)
	})
}

// leafRest is leaf for commands that take arguments after "--" (workflow
// params), which it passes on untouched.
func leafRest(name, usage, help string, fs *flag.FlagSet, nargs [2]int, exec func(ctx context.Context, args, rest []string) error) *ffcli.Command {
	return &ffcli.Command{
		Name:       name,
		ShortUsage: "agent-worker " + usage,
		ShortHelp:  help,
		FlagSet:    fs,
		Options:    []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Exec: func(ctx context.Context, args []string) error {
			pos, rest, err := interspersed(fs, args)
			if err != nil {
				return err // run reports a flag error, or prints the help for -h
			}
			if len(pos) < nargs[0] || (nargs[1] >= 0 && len(pos) > nargs[1]) {
				return helpError{msg: fmt.Sprintf("%s takes %s, got %d: usage: agent-worker %s", name, argCount(nargs), len(pos), usage)}
			}
			// Sent as JSON, bytes that are not UTF-8 would arrive as U+FFFD.
			for i, a := range pos {
				if !utf8.ValidString(a) {
					return usagef("%s: argument %d is not valid UTF-8: pass text; to pass binary data, write it to a file and pass its path", name, i+1)
				}
			}
			return exec(ctx, pos, rest)
		},
	}
}

// interspersed finishes what flag.Parse started: it keeps parsing flags that
// follow positional arguments. Arguments after a bare "--" are returned
// separately, untouched.
func interspersed(fs *flag.FlagSet, args []string) (pos, rest []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	for len(args) > 0 {
		if a := args[0]; len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			args = args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		args = fs.Args()
	}
	return pos, rest, nil
}

// run is the CLI: it parses args, runs the command and turns the outcome
// into one line on stderr and an exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	root := newRoot(e)
	if code, ok := runHidden(ctx, root, e, args); ok {
		return code
	}
	err := root.Parse(args)
	if err == nil {
		err = root.Run(ctx)
	}
	if err == nil {
		return api.ExitOK
	}
	// The command the error is about, whose help tells how to call it.
	cmd, path := selected(root, args)
	var noExec ffcli.NoExecError
	var ue usageError
	var he helpError
	var ae *api.Error
	var code exitCode
	switch {
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "agent-worker: interrupted\n")
		return api.ExitInterrupted
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "%s", helpText(root, cmd, path))
		return api.ExitOK
	case errors.As(err, &noExec):
		fmt.Fprintf(stderr, "agent-worker: missing or unknown command\n%s\n", helpHint(path))
		return api.ExitUsage
	case errors.As(err, &he):
		if he.hint == "" {
			he.hint = helpHint(path)
		}
		fmt.Fprintf(stderr, "agent-worker: %s\n%s\n", he.msg, he.hint)
		return api.ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agent-worker: %s\n", ue.msg)
		if strings.HasPrefix(ue.msg, "usage:") && !strings.Contains(ue.msg, "--help") {
			fmt.Fprintf(stderr, "%s\n", helpHint(path))
		}
		return api.ExitUsage
	case errors.As(err, &ae):
		fmt.Fprintf(stderr, "agent-worker: %s\n", ae.Message)
		return api.ExitCode(ae.Code)
	case isFlagError(err):
		fmt.Fprintf(stderr, "agent-worker: %s\n%s\n", flagMessage(err, cmd), helpHint(path))
		return api.ExitUsage
	default:
		fmt.Fprintf(stderr, "agent-worker: %v\n", err)
		return api.ExitError
	}
}

// isFlagError recognises the flag package's parse errors, which it only
// returns as plain strings.
func isFlagError(err error) bool {
	s := err.Error()
	for _, p := range []string{"flag provided but not defined", "invalid value", "invalid boolean", "flag needs an argument",
		"error parsing commandline arguments", "error setting flag", "config file"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func newRoot(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("agent-worker", flag.ContinueOnError)
	version := fs.Bool("version", false, "print the version and exit (the same as the version command)")
	var root *ffcli.Command
	root = &ffcli.Command{
		ShortUsage: "agent-worker <command> [flags] [args]",
		LongHelp: `agent-worker runs teams of AI agents. The daemon decides when an agent
runs; every command here is one call to the daemon's HTTP API, and starts
the daemon when it is not running.

Targets: alice (alice@global:main), alice@review, alice@review:pr-1, @review:pr-1.
Every flag can also be set from the environment: --home ← AGENT_WORKER_HOME.

` + api.ExitCodesHelp,
		FlagSet: fs,
		Subcommands: []*ffcli.Command{
			daemonCmd(e), statusCmd(e), doctorCmd(e), newCmd(e), listCmd(e, "list"), listCmd(e, "ls"),
			infoCmd(e), stopCmd(e), sendCmd(e), peekCmd(e), docCmd(e), proposalsCmd(e), mcpConfigCmd(e),
			askCmd(e), serveCmd(e), pluginsCmd(e, "plugins"), pluginsCmd(e, "backends"),
			resumeCmd(e), resetCmd(e), scheduleCmd(e), runCmd(e), startCmd(e), forkCmd(e), workflowsCmd(e),
			pauseCmd(e), cancelCmd(e), runsCmd(e), logsCmd(e), budgetCmd(e), consoleCmd(e), tasksCmd(e),
			worktreeCmd(e), backupCmd(e), questionsCmd(e), answerCmd(e), approveCmd(e), denyCmd(e),
			notificationsCmd(e), notifyCmd(e), hooksCmd(e), hookCmd(e), sessionsCmd(e), sessionCmd(e), statuslineCmd(e), searchCmd(e), skillsCmd(e), effortCmd(e), effortsCmd(e),
			completionCmd(e),
		},
		Exec: func(ctx context.Context, args []string) error {
			if *version {
				e.printf("%s", api.VersionText())
				return nil
			}
			if len(args) > 0 {
				return unknownCommand(root, nil, args[0])
			}
			e.printf("%s", helpText(root, root, nil))
			return nil
		},
	}
	root.Subcommands = append(root.Subcommands, helpCmd(e, root), versionCmd(e))
	setHelp(root)
	return root
}

// interruptible returns a context cancelled by Ctrl-C, for commands that
// stream until the user stops them.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// parseTarget reads a target typed by the user; a bad one is a usage error.
func parseTarget(s string) (api.Target, error) { return usageTarget(api.ParseTarget(s)) }

// parseAgentTarget is parseTarget for commands that need an agent.
func parseAgentTarget(s string) (api.Target, error) { return usageTarget(api.ParseAgentTarget(s)) }

func usageTarget(t api.Target, err error) (api.Target, error) {
	if err != nil {
		return t, usageError{err.Error()}
	}
	return t, nil
}

// agentClient is how a command about one agent begins: it reads the agent
// target, so that a typo is a usage error before any daemon is started, and
// connects, starting a daemon if none is running.
func (e *env) agentClient(ctx context.Context, agent string) (api.Target, *api.Client, error) {
	t, err := parseAgentTarget(agent)
	if err != nil {
		return t, nil, err
	}
	c, err := e.connect(ctx, true)
	return t, c, err
}
