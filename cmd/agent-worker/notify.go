package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

func notificationsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("notifications", flag.ContinueOnError)
	e.common(fs)
	failed := fs.Bool("failed", false, "only the notifications given up on, with their last error")
	return leaf("notifications", "notifications [--failed] [--json]",
		"list the notifications sent to notify: webhooks, newest first: event, workflow, webhook, pending|delivered|failed, attempts, last error", fs, [2]int{0, 0},
		func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			ns, err := c.Notifications(ctx, *failed)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.NotificationList{Notifications: ns})
			}
			return e.printNotifications(ns, *failed)
		})
}

// printNotifications is the table of `notifications`.
func (e *env) printNotifications(ns []api.Notification, failed bool) error {
	if len(ns) == 0 {
		if failed {
			e.printf("no notification failed\n")
		} else {
			e.printf("no notifications: add notify: [{webhook: URL, events: [...]}] to a workflow, or start the daemon with --notify-config FILE\n")
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT\tWORKFLOW\tSTATE\tATTEMPTS\tAGE\tWEBHOOK\tLAST ERROR")
	for _, n := range ns {
		wf := "-"
		if n.Workflow != "" {
			wf = api.Target{Workflow: n.Workflow, Tag: n.Tag}.Display()
		}
		state := n.State
		if n.State == "pending" && !n.NextAt.IsZero() && n.Attempts > 0 {
			state += ", next in " + age(max(time.Until(n.NextAt), 0))
		}
		lastErr := "-"
		if n.LastError != "" {
			lastErr = api.OneLine(n.LastError, 200)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, n.Event, wf, state, n.Attempts, age(time.Since(n.CreatedAt)), n.URL, lastErr)
	}
	return tw.Flush()
}

// notifyCmd groups the notification commands that act.
func notifyCmd(e *env) *ffcli.Command {
	return &ffcli.Command{
		Name:       "notify",
		ShortUsage: "agent-worker notify test @wf[:tag]",
		ShortHelp:  "send a test notification to a workflow's notify: webhooks",
		LongHelp: `A workflow's notify: list (and the daemon's --notify-config) names webhooks
the daemon POSTs events to: question, approval, run_failed, over_budget,
loop_guard, idle, member_down. Each POST is JSON with a "text" line, signed
X-Agent-Worker-Signature-256: sha256=<HMAC-SHA256 of the body> with the
secret in the daemon's environment variable secret_env, and carries its
delivery id in X-Agent-Worker-Delivery. A delivery is retried for a day;
` + "`agent-worker notifications`" + ` lists them.`,
		FlagSet:     flag.NewFlagSet("notify", flag.ContinueOnError),
		Options:     []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Subcommands: []*ffcli.Command{notifyTestCmd(e)},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker notify test @wf[:tag] (see agent-worker notify --help)")
		},
	}
}

func notifyTestCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("notify test", flag.ContinueOnError)
	e.common(fs)
	return leaf("test", "notify test @wf[:tag] [--json]",
		"send a test event to every notify: webhook of the workflow, whatever its events, and print the delivery ids", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if !t.IsScope() {
				return usagef("notify test takes a workflow, @wf[:tag], not the agent %s", t.Display())
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			res, err := c.NotifyTest(ctx, t.Workflow, t.Tag)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			e.printf("test notification queued for %s's webhooks (`agent-worker notifications` shows how it went):\n", t.Display())
			for _, id := range res.Deliveries {
				e.printf("%s\n", id)
			}
			return nil
		})
}
