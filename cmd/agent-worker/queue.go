package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// worktreeQueueCmd is `worktree queue`: the merge queue of workflows whose
// workspace has checks, and `worktree queue show <id>`.
func worktreeQueueCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree queue", flag.ContinueOnError)
	e.common(fs)
	all := fs.Bool("all", false, "also list entries that landed, failed or were removed (the newest 50)")
	cmd := leaf("queue", "worktree queue [@wf[:tag]] [--all] [--json] | queue show <id>",
		"list the merge queue (workspace: {checks: [...]}): each entry's id, state, branch and base, and how a finished one ended",
		fs, [2]int{0, 1}, func(ctx context.Context, args []string) error {
			target := ""
			if len(args) == 1 {
				t, err := parseTarget(args[0])
				if err != nil {
					return err
				}
				if t.Agent != "" {
					return usagef("worktree queue takes a workflow (@%s), not an agent: the queue belongs to the workflow", t.Workflow)
				}
				target = t.String()
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			es, err := c.Queue(ctx, target, *all)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.QueueList{Entries: es})
			}
			return e.printQueue(es)
		})
	cmd.Subcommands = []*ffcli.Command{worktreeQueueShowCmd(e)}
	return cmd
}

// printQueue is the table of `worktree queue`.
func (e *env) printQueue(es []api.QueueEntry) error {
	if len(es) == 0 {
		e.printf("the merge queue is empty: with workspace: {checks: [...]}, `agent-worker worktree integrate` (and worktree_integrate) queue branches here\n")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAGENT\tBRANCH\tINTO\tBY\tSINCE\tOUTCOME")
	for _, q := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.ID, q.State, api.Target{Agent: q.Agent, Workflow: q.Workflow, Tag: q.Tag},
			q.Branch, q.Base, q.By, q.CreatedAt.Local().Format(time.DateTime), queueOutcome(q))
	}
	return tw.Flush()
}

// queueOutcome is an entry's last column: where it stands, or how it ended.
func queueOutcome(q api.QueueEntry) string {
	switch q.State {
	case api.QueueQueued:
		return fmt.Sprintf("%d ahead", q.Position)
	case api.QueueLanded:
		return fmt.Sprintf("commit %.12s", q.Commit)
	case api.QueueFailed, api.QueueRemoved:
		r := q.Reason
		if len(r) > 100 {
			r = r[:97] + "..."
		}
		return r
	}
	return "-"
}

func worktreeQueueShowCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree queue show", flag.ContinueOnError)
	e.common(fs)
	return leaf("show", "worktree queue show <id> [--json]",
		"show a merge queue entry: its branch, state, outcome, and every check run it was part of with its output",
		fs, [2]int{1, 1}, func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			q, err := c.QueueEntry(ctx, args[0])
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(q)
			}
			e.printf("%s: %s's branch %s into %s, asked by %s\n", q.ID, api.Target{Agent: q.Agent, Workflow: q.Workflow, Tag: q.Tag}, q.Branch, q.Base, q.By)
			e.printf("state:    %s (attempt %d)\n", q.State, q.Attempts)
			e.printf("queued:   %s\n", q.CreatedAt.Local().Format(time.DateTime))
			if !q.EndedAt.IsZero() {
				e.printf("ended:    %s (%s in the queue)\n", q.EndedAt.Local().Format(time.DateTime), q.EndedAt.Sub(q.CreatedAt).Round(time.Millisecond))
			}
			if q.Head != "" {
				e.printf("head:     %s\n", q.Head)
			}
			if q.Commit != "" {
				e.printf("commit:   %s\n", q.Commit)
			}
			if q.Reason != "" {
				e.printf("reason:   %s\n", q.Reason)
			}
			if len(q.Checks) == 0 {
				e.printf("\nno check has run for it yet\n")
			}
			for i, ch := range q.Checks {
				how := fmt.Sprintf("exit %d", ch.ExitCode)
				if ch.TimedOut {
					how = "timed out"
				}
				e.printf("\ncheck %d: `%s` on %s: %s in %s, %s\n", i+1, ch.Command, strings.Join(ch.Batch, " + "), how,
					(time.Duration(ch.DurationMS) * time.Millisecond).String(), ch.At.Local().Format(time.DateTime))
				for _, line := range strings.Split(strings.TrimRight(ch.Output, "\n"), "\n") {
					e.printf("  | %s\n", line)
				}
			}
			return nil
		})
}

func worktreeDequeueCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree dequeue", flag.ContinueOnError)
	e.common(fs)
	reason := fs.String("reason", "", "why (posted in the team's channel)")
	return leaf("dequeue", "worktree dequeue <id> [--reason R] [--json]",
		"take an entry out of the merge queue (queued, or being checked: it then does not land); the branch is left as it is",
		fs, [2]int{1, 1}, func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			q, err := c.Dequeue(ctx, args[0], *reason)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(q)
			}
			e.printf("%s is out of the merge queue of %s: %s stays as it is\n", q.ID, q.Base, q.Branch)
			return nil
		})
}
