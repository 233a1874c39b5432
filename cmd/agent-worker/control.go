package main

import (
	"context"
	"encoding/hex"
	"flag"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// The control commands: pause and resume an agent or a workflow:tag,
// cancel a run in flight. Each is one call to the daemon.

func pauseCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("pause", flag.ContinueOnError)
	e.common(fs)
	return leaf("pause", "pause <agent | @wf[:tag]>",
		"start no new run for an agent or every agent of a workflow until resumed; messages wait unread, a run in flight finishes", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			return e.control(ctx, args[0], "paused", (*api.Client).Pause)
		})
}

func resumeCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	e.common(fs)
	return leaf("resume", "resume <agent | @wf[:tag]>",
		"clear a paused, failed or over-budget agent (or workflow, and its agents) so its unread messages run again", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			return e.control(ctx, args[0], "resumed", (*api.Client).Resume)
		})
}

// control runs pause or resume on an agent or a workflow:tag.
func (e *env) control(ctx context.Context, target, done string, call func(*api.Client, context.Context, api.Target) error) error {
	t, err := parseTarget(target)
	if err != nil {
		return err
	}
	c, err := e.connect(ctx, true)
	if err != nil {
		return err
	}
	if err := call(c, ctx, t); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(api.Status{Status: done, Target: t.Display()})
	}
	e.printf("%s: %s\n", done, t.Display())
	return nil
}

func cancelCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	e.common(fs)
	return leaf("cancel", "cancel <run-id | agent>",
		"end a run in flight (its plugin's process group is killed); the messages it was shown stay unread for the agent's next run", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			var out api.Cancelled
			if isRunID(args[0]) {
				c, err := e.connect(ctx, true)
				if err != nil {
					return err
				}
				if out, err = c.CancelRun(ctx, args[0]); err != nil {
					return err
				}
			} else {
				t, c, err := e.agentClient(ctx, args[0])
				if err != nil {
					return err
				}
				if out, err = c.CancelAgent(ctx, t); err != nil {
					return err
				}
			}
			if e.json {
				return e.printJSON(out)
			}
			e.printf("cancelled: %s (%s); the messages it was shown stay unread: its next run (on a new message or its schedule) sees them again\n", out.Run, out.Target)
			return nil
		})
}

// isRunID tells a run id (run_ and 16 hex digits, as the daemon makes
// them) from an agent name.
func isRunID(s string) bool {
	id, ok := strings.CutPrefix(s, "run_")
	if !ok || len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}
