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

// sessionsCmd is `sessions [agent]`: the live Claude Code sessions as
// context windows, chained across compactions and resumes.
func sessionsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	e.common(fs)
	return leaf("sessions", "sessions [agent] [--json]",
		"list the live Claude Code sessions (context windows) of every agent or of one, oldest first: the session each continues, heartbeats, context use, files read, effort and phase", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			t, err := optionalAgent(args)
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			list, err := c.Sessions(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(list)
			}
			if len(list.Sessions) == 0 {
				e.printf("no live sessions: `agent-worker hooks install <agent>` makes a Claude Code session one\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tAGENT\tPREV\tSTARTED\tLAST HEARTBEAT\tBEATS\tCONTEXT\tFILES\tEFFORT\tSTATE\tRUN")
			for _, s := range list.Sessions {
				state := "open"
				if s.EndedAt != nil {
					state = "ended"
				}
				if s.Dehydrated {
					state += ", dehydrated"
				}
				effort := "-"
				if s.Effort != "" {
					effort = s.Effort + ":" + s.Phase
				}
				ctxUse := "-"
				if s.ContextTokens > 0 {
					ctxUse = fmt.Sprintf("%d tokens", s.ContextTokens)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\t%d\t%s\t%d\t%s\t%s\t%s\n", s.ID, s.Agent, orDash(s.Prev),
					s.StartedAt.Local().Format(time.DateTime), time.Since(s.HeartbeatAt).Round(time.Second), s.Heartbeats,
					ctxUse, len(s.Loaded), effort, state, s.Run)
			}
			return tw.Flush()
		})
}

// sessionCmd groups `session continue`.
func sessionCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	return &ffcli.Command{
		Name:        "session",
		ShortUsage:  "agent-worker session continue [agent]",
		ShortHelp:   "pick a live Claude Code session up again by hand",
		FlagSet:     fs,
		Subcommands: []*ffcli.Command{sessionContinueCmd(e)},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker session continue [agent]")
		},
	}
}

func sessionContinueCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("session continue", flag.ContinueOnError)
	e.common(fs)
	return leaf("continue", "session continue [agent] [--json]",
		"print the dehydration payload of the agent's newest session (of the newest session of any agent): its effort, phase, proof, notes, files read, the team's last messages and what it said it would do next, to paste into a new session", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			t, err := optionalAgent(args)
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			out, err := c.ContinueSession(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(out)
			}
			e.printf("%s\n", strings.TrimRight(out.Payload, "\n"))
			return nil
		})
}

// optionalAgent is the agent of a command whose agent argument may be
// left out (nil).
func optionalAgent(args []string) (*api.Target, error) {
	if len(args) == 0 {
		return nil, nil
	}
	t, err := parseAgentTarget(args[0])
	return &t, err
}
