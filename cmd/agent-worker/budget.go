package main

import (
	"context"
	"flag"
	"strconv"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

func budgetCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	e.common(fs)
	usd := fs.String("usd", "", "most dollars the target may spend since its workflow started")
	tokens := fs.String("tokens", "", "most tokens (in + out)")
	runs := fs.String("runs", "", "most runs")
	hard := fs.Bool("hard", false, "cancel a run in flight that crosses the budget instead of letting it finish")
	return leaf("budget", "budget <agent | @wf[:tag]> set [--usd X] [--tokens N] [--runs N] [--hard] | budget <target> clear",
		"cap what a workflow:tag or one agent may spend; at the cap its agents go over_budget and nothing more runs until `resume` (a workflow file's budget: replaces this at its next start or edit)",
		fs, [2]int{2, 2},
		func(ctx context.Context, args []string) error {
			if args[1] != "set" && args[1] != "clear" {
				return usagef("usage: agent-worker budget <agent | @wf[:tag]> set [--usd X] [--tokens N] [--runs N] [--hard] | budget <target> clear")
			}
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			var req api.BudgetRequest
			if args[1] == "set" {
				if req, err = budgetRequest(*usd, *tokens, *runs, *hard); err != nil {
					return err
				}
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			if args[1] == "clear" {
				err = c.ClearBudget(ctx, t)
			} else {
				err = c.SetBudget(ctx, t, req)
			}
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.Status{Status: "budget " + args[1], Target: t.Display()})
			}
			if args[1] == "clear" {
				e.printf("%s: no budget\n", t.Display())
			} else {
				e.printf("%s: budget set\n", t.Display())
			}
			return nil
		})
}

// budgetRequest reads the limits of `budget set`: at least one, none
// negative.
func budgetRequest(usd, tokens, runs string, hard bool) (api.BudgetRequest, error) {
	req := api.BudgetRequest{Hard: hard}
	if usd != "" {
		v, err := strconv.ParseFloat(usd, 64)
		if err != nil || v < 0 {
			return req, usagef("--usd %q: give a number of dollars, 0 or more", usd)
		}
		req.USD = &v
	}
	for name, in := range map[string]struct {
		s   string
		dst **int64
	}{"tokens": {tokens, &req.Tokens}, "runs": {runs, &req.Runs}} {
		if in.s == "" {
			continue
		}
		v, err := strconv.ParseInt(in.s, 10, 64)
		if err != nil || v < 0 {
			return req, usagef("--%s %q: give a whole number, 0 or more", name, in.s)
		}
		*in.dst = &v
	}
	if req.USD == nil && req.Tokens == nil && req.Runs == nil {
		return req, usagef("budget set needs a limit: --usd, --tokens or --runs")
	}
	return req, nil
}
