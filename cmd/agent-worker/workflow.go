package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// exitCode is an error that sets the process's exit status; its message
// (if any) has already been printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func runCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	e.common(fs)
	tag := fs.String("tag", api.DefaultTag, "tag of this run: two tags of one workflow share nothing")
	timeout := fs.Duration("timeout", 0, "stop the team after this long (0: no limit)")
	return leafRest("run", "run <workflow.yaml> [--tag T] [--timeout D] [--json] [-- params]",
		"run a workflow until its team is idle, show the channel, then print a summary and stop it", fs, [2]int{1, 1},
		func(ctx context.Context, args, params []string) error {
			return e.runWorkflow(ctx, args[0], *tag, params, *timeout, true)
		})
}

func startCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	e.common(fs)
	tag := fs.String("tag", api.DefaultTag, "tag of this instance: two tags of one workflow share nothing")
	background := fs.Bool("background", false, "return at once and leave the workflow running")
	return leafRest("start", "start <workflow.yaml> [--tag T] [--background] [-- params]",
		"start a persistent workflow; it reloads when its file changes (Ctrl-C stops a foreground one)", fs, [2]int{1, 1},
		func(ctx context.Context, args, params []string) error {
			if !*background {
				return e.runWorkflow(ctx, args[0], *tag, params, 0, false)
			}
			_, w, err := e.startWorkflow(ctx, args[0], *tag, params)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(w)
			}
			if w.TakenOver {
				e.printf("%s was already running in the cluster: this member watches %s from now on\n", w.Target, args[0])
				return nil
			}
			e.printf("started %s: %s\nfollow it with `agent-worker peek %s --follow`; stop it with `agent-worker stop %s`\n",
				w.Target, strings.Join(w.Agents, ", "), w.Target, w.Target)
			return nil
		})
}

func workflowsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("workflows", flag.ContinueOnError)
	e.common(fs)
	cmd := leaf("workflows", "workflows [--json] | workflows accept <@workflow[:tag]>", "list every workflow:tag with its state, file, agents, runs and spend, and any edit waiting for you", fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			wfs, err := c.ListWorkflows(ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.WorkflowList{Workflows: wfs})
			}
			if len(wfs) == 0 {
				e.printf("no workflows: start one with `agent-worker start <workflow.yaml>`\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKFLOW\tSTATE\tAGENTS\tRUNS\tFAILED\tTOKENS IN/OUT\tCOST\tFILE")
			for _, w := range wfs {
				var members []string
				for _, m := range w.Members {
					members = append(members, m.Name+" ("+string(m.State)+")")
				}
				var sp api.Spend
				if w.Spend != nil {
					sp = *w.Spend
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d/%d\t$%.4f\t%s\n", w.Target, w.State, orNone(strings.Join(members, ", ")),
					sp.Runs, sp.FailedRuns, sp.InputTokens, sp.OutputTokens, sp.CostUSD, orDash(w.SourcePath))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, w := range wfs {
				if w.Error != "" {
					e.printf("%s: %s\n", w.Target, w.Error)
				}
				if w.Pending != nil {
					printPending(e, w)
				}
			}
			return nil
		})
	cmd.LongHelp = `An edit of a workflow's file that widens what its runs may do (a
sandbox off, a new read or write path, network, an approval gate
dropped, another backend or program, new env, a raised budget, ...) is
not applied by the hot reload: a run may write the file. The last
accepted version keeps running, and the edit waits for you here, in
status and in the console. ` + "`agent-worker workflows accept @wf:tag`" + ` applies it;
undoing the edit withdraws it. Other edits apply at once.`
	cmd.Subcommands = []*ffcli.Command{workflowsAcceptCmd(e)}
	return cmd
}

// printPending shows w's edit that waits, as a diff of the policy.
func printPending(e *env, w api.Workflow) {
	e.printf("%s: an edit of %s waits for you (it widens what runs may do; the last accepted version keeps running):\n", w.Target, orDash(w.SourcePath))
	for _, r := range w.Pending.Widens {
		e.printf("  + %s\n", r)
	}
	e.printf("  apply it with `agent-worker workflows accept %s`, or undo the edit\n", w.Target)
}

func workflowsAcceptCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("workflows accept", flag.ContinueOnError)
	e.common(fs)
	cmd := leaf("accept", "workflows accept <@workflow[:tag]> [--json]",
		"apply the edit of a workflow's file that waits because it widens what its runs may do", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := parseWorkflowTarget(args[0])
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			w, err := c.AcceptWorkflow(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(w)
			}
			e.printf("accepted: %s runs the edit of %s from its agents' next runs\n", w.Target, orDash(w.SourcePath))
			return nil
		})
	cmd.LongHelp = `Applies exactly the version of the file that ` + "`agent-worker workflows`" + ` and
status showed waiting, not what the file holds by now. Accepting is the
owner's decision: read the lines marked + first, since a run may have
written the edit.`
	return cmd
}

// parseWorkflowTarget reads a workflow typed by the user: @review,
// @review:pr-1, or review alone.
func parseWorkflowTarget(s string) (api.Target, error) {
	if !strings.Contains(s, "@") {
		s = "@" + s
	}
	t, err := parseTarget(s)
	if err == nil && t.Agent != "" {
		err = usagef("%s names an agent: give a workflow, e.g. @review or @review:pr-1", s)
	}
	return t, err
}

// orDash stands in for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e *env) startWorkflow(ctx context.Context, file, tag string, params []string) (*api.Client, api.Workflow, error) {
	c, path, err := e.workflowClient(ctx, file)
	if err != nil {
		return nil, api.Workflow{}, err
	}
	w, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: path, Tag: tag, Args: params})
	return c, w, err
}

// workflowClient resolves a workflow file's path (the daemon reads it from
// its own working directory) and connects, starting a daemon if needed.
func (e *env) workflowClient(ctx context.Context, file string) (*api.Client, string, error) {
	path, err := filepath.Abs(file)
	if err != nil {
		return nil, "", usagef("workflow file %q: %v", file, err)
	}
	c, err := e.connect(ctx, true)
	if err != nil {
		return nil, "", err
	}
	return c, path, nil
}

// runWorkflow starts a workflow and shows its channel live. With untilIdle
// (`run`) it returns when the team is done; otherwise (`start` in the
// foreground) at Ctrl-C. Either way the workflow is stopped at the end.
// It subscribes to the workflow's events before starting it (a dry run
// names the workflow), so not even the first tool call is missed.
func (e *env) runWorkflow(ctx context.Context, file, tag string, params []string, timeout time.Duration, untilIdle bool) error {
	c, path, err := e.workflowClient(ctx, file)
	if err != nil {
		return err
	}
	req := api.StartWorkflow{Path: path, Tag: tag, Args: params, DryRun: true}
	dry, err := c.StartWorkflow(ctx, req)
	if err != nil {
		return err
	}
	sig, stopSig := interruptible(ctx)
	defer stopSig()
	follow, cancelFollow := context.WithCancel(sig)
	defer cancelFollow()
	if timeout > 0 {
		var cancel context.CancelFunc
		follow, cancel = context.WithTimeout(follow, timeout)
		defer cancel()
	}
	end := runEnd{target: api.Target{Workflow: dry.Name, Tag: dry.Tag}, timeout: timeout, untilIdle: untilIdle}
	connected := make(chan struct{})
	followed := make(chan error, 1)
	h := e.workflowPrinters()
	h.SinceSeq = dry.StartSeq
	h.Connected = func() { close(connected) }
	h.Idle = func(idle api.Workflow) error {
		if !untilIdle {
			return nil
		}
		end.done = &idle // read only after followed has answered
		return api.ErrStopFollowing
	}
	printWorkflow := h.Workflow
	h.Workflow = func(we contract.WorkflowEvent) error {
		if err := printWorkflow(we); err != nil {
			return err
		}
		if untilIdle && we.Change == "paused" {
			end.paused = we.Error // the loop guard stopped the team: it will not finish on its own
			return api.ErrStopFollowing
		}
		return nil
	}
	go func() { followed <- c.Follow(follow, dry.Target, 1000, h) }()
	select {
	case <-connected:
	case err := <-followed:
		if err == nil {
			err = errors.New("the daemon closed the event stream")
		}
		return err
	}
	req.DryRun = false
	w, err := c.StartWorkflow(ctx, req)
	if err != nil {
		cancelFollow()
		<-followed
		return err
	}
	if !e.json {
		e.dimf("started %s with %s\n", w.Target, strings.Join(w.Agents, ", "))
	}
	err = <-followed
	bg := context.WithoutCancel(ctx)
	end.interrupted, end.timedOut = sig.Err() != nil, timeout > 0 && follow.Err() != nil && sig.Err() == nil
	if stopErr := c.StopWorkflow(bg, end.target, end.done == nil); stopErr != nil && err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	return e.summarize(bg, c, end)
}

// workflowPrinters shows a running workflow's events other than its
// messages and tool calls: failed runs and agents, reloads and workflow
// errors (everything, as NDJSON, with --json).
func (e *env) workflowPrinters() api.FollowHandlers {
	return api.FollowHandlers{
		Message: e.printMessage,
		Tool:    e.printTool,
		Run: func(kind string, r api.RunEventInfo) error {
			if e.json {
				return e.printNDJSON(map[string]any{"event": kind, "run": r})
			}
			if kind == "run_failed" {
				e.dimf("   ~ %s's run failed (attempt %d): %s\n", r.Agent, r.Attempt, r.Error)
			}
			return nil
		},
		State: func(st api.AgentStateEvent) error {
			if e.json {
				return e.printNDJSON(map[string]any{"event": "agent_state", "state": st})
			}
			if st.State == api.AgentFailed {
				e.dimf("   ~ %s failed: %s\n", st.Agent, st.Error)
			}
			return nil
		},
		Workflow: func(we contract.WorkflowEvent) error {
			if e.json {
				return e.printNDJSON(map[string]any{"event": "workflow", "workflow": we})
			}
			switch {
			case we.Error != "":
				fmt.Fprintf(e.stderr, "agent-worker: %s\n", we.Error)
			case we.Change == "reloaded":
				e.dimf("   ~ %s reloaded from its file\n", we.Target)
			}
			return nil
		},
	}
}

// runEnd is how a foreground workflow's following ended.
type runEnd struct {
	target    api.Target
	done      *api.Workflow // the workflow as it was when its team went idle; nil if it never did
	timeout   time.Duration
	untilIdle bool
	// interrupted: the user pressed Ctrl-C; timedOut: --timeout ran out.
	interrupted, timedOut bool
	// paused says why the team was paused (the loop guard), if it was.
	paused string
}

// summarize prints a stopped workflow's totals and turns how it ended into
// the exit status scripts rely on: 130 for Ctrl-C, 1 for a timeout or
// failed agents.
func (e *env) summarize(ctx context.Context, c *api.Client, end runEnd) error {
	final, err := c.GetWorkflow(ctx, end.target)
	if err != nil {
		return err
	}
	p := final.Progress
	if end.done != nil {
		p = end.done.Progress // as it was when the team finished
	}
	if e.json {
		if err := e.printNDJSON(map[string]any{"event": "summary", "workflow": final.Target, "progress": p,
			"interrupted": end.interrupted, "timed_out": end.timedOut}); err != nil {
			return err
		}
	} else if p != nil {
		e.printf("%s: %d run(s), %d failed, %d tokens in / %d out, $%.4f%s, %s\n", final.Target, p.Runs, p.FailedRuns,
			p.InputTokens, p.OutputTokens, p.CostUSD, unpricedText(p.UnpricedRuns), (time.Duration(p.DurationMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	switch {
	case end.interrupted:
		return exitCode(130)
	case end.timedOut:
		fmt.Fprintf(e.stderr, "agent-worker: %s timed out after %s and was stopped\n", final.Target, end.timeout)
		return exitCode(1)
	case end.paused != "":
		fmt.Fprintf(e.stderr, "agent-worker: %s was %s, so its team would not finish; it was stopped\n", final.Target, end.paused)
		return exitCode(1)
	case p != nil && len(p.Failed) > 0:
		fmt.Fprintf(e.stderr, "agent-worker: failed agents: %s (see `agent-worker info <agent>`)\n", strings.Join(p.Failed, ", "))
		return exitCode(1)
	case !end.untilIdle:
		return nil
	case end.done == nil:
		return errors.New("the daemon closed the stream before the team finished")
	}
	return nil
}
