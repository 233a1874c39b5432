package main

import (
	"context"
	"flag"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// forkCmd starts a new tag of a workflow from its team's state at a
// channel seq, to replay a team's decision from there (issue 46).
func forkCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	e.common(fs)
	at := fs.Int64("at", 0, "the seq of the channel message to fork at (the #N that `peek` shows): the fork has the messages up to and including it")
	tag := fs.String("tag", "", "the new tag the fork runs under (required; must not exist)")
	run := fs.Bool("run", false, "run the fork's agents at once; without it the fork starts paused (`agent-worker resume @wf:tag` runs it)")
	return leaf("fork", "fork <@wf[:tag]> --at <seq> --tag <new> [--run] [--json]",
		"start a new tag of a workflow from its team's state at a channel seq: messages up to it, tasks and read positions as of then, documents as they are", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			from, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if !from.IsScope() {
				return usagef("fork: %s is an agent: fork a workflow, e.g. @%s:%s", args[0], from.Workflow, from.Tag)
			}
			if *at <= 0 {
				return usagef("fork: --at is required: the seq of a message of %s's channel (see `agent-worker peek %s`)", from.Display(), from.Display())
			}
			if *tag == "" {
				return usagef("fork: --tag is required: the new tag the fork runs under, e.g. --tag debug-1")
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			out, err := c.Fork(ctx, from, api.ForkWorkflow{At: *at, Tag: *tag, Run: *run})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(out)
			}
			e.printf("forked %s at seq %d into %s: %d messages, %d tasks, %d documents\n",
				out.From, out.At, out.Workflow.Target, out.Messages, len(out.Tasks), len(out.Documents))
			if len(out.DocumentsChanged) > 0 {
				e.printf("changed after seq %d, copied as they are now (documents keep no history): %s\n", out.At, strings.Join(out.DocumentsChanged, ", "))
			}
			if out.Running {
				e.printf("its agents run; follow it with `agent-worker peek %s --follow`\n", out.Workflow.Target)
			} else {
				e.printf("it is paused: run it with `agent-worker resume %s`\n", out.Workflow.Target)
			}
			return nil
		})
}
