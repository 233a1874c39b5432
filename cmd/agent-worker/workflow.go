package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
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
			e.printf("started %s: %s\nfollow it with `agent-worker peek %s --follow`; stop it with `agent-worker stop %s`\n",
				w.Target, strings.Join(w.Agents, ", "), w.Target, w.Target)
			return nil
		})
}

func (e *env) startWorkflow(ctx context.Context, file, tag string, params []string) (*api.Client, api.Workflow, error) {
	path, err := filepath.Abs(file)
	if err != nil {
		return nil, api.Workflow{}, usagef("workflow file %q: %v", file, err)
	}
	c, err := e.connect(ctx, true)
	if err != nil {
		return nil, api.Workflow{}, err
	}
	w, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: path, Tag: tag, Args: params})
	return c, w, err
}

// runWorkflow starts a workflow and shows its channel live. With untilIdle
// (`run`) it returns when the team is done; otherwise (`start` in the
// foreground) at Ctrl-C. Either way the workflow is stopped at the end.
// It subscribes to the workflow's events before starting it (a dry run
// names the workflow), so not even the first tool call is missed.
func (e *env) runWorkflow(ctx context.Context, file, tag string, params []string, timeout time.Duration, untilIdle bool) error {
	path, err := filepath.Abs(file)
	if err != nil {
		return usagef("workflow file %q: %v", file, err)
	}
	c, err := e.connect(ctx, true)
	if err != nil {
		return err
	}
	req := api.StartWorkflow{Path: path, Tag: tag, Args: params, DryRun: true}
	dry, err := c.StartWorkflow(ctx, req)
	if err != nil {
		return err
	}
	target := api.Target{Workflow: dry.Name, Tag: dry.Tag}
	sig, stopSig := interruptible(ctx)
	defer stopSig()
	follow, cancelFollow := context.WithCancel(sig)
	defer cancelFollow()
	if timeout > 0 {
		var cancel context.CancelFunc
		follow, cancel = context.WithTimeout(follow, timeout)
		defer cancel()
	}
	var done *api.Workflow
	connected := make(chan struct{})
	followed := make(chan error, 1)
	go func() {
		followed <- c.Follow(follow, dry.Target, 1000, api.FollowHandlers{
			SinceSeq:  dry.StartSeq,
			Connected: func() { close(connected) },
			Message:   e.printMessage,
			Tool:      e.printTool,
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
				if st.State == "failed" {
					e.dimf("   ~ %s failed: %s\n", st.Agent, st.Error)
				}
				return nil
			},
			Workflow: func(we api.WorkflowEvent) error {
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
			Idle: func(idle api.Workflow) error {
				if !untilIdle {
					return nil
				}
				done = &idle
				return api.ErrStopFollowing
			},
		})
	}()
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
	interrupted, timedOut := sig.Err() != nil, timeout > 0 && follow.Err() != nil && sig.Err() == nil
	if stopErr := c.StopWorkflow(bg, target, done == nil); stopErr != nil && err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	final, err := c.GetWorkflow(bg, target)
	if err != nil {
		return err
	}
	p := final.Progress
	if done != nil {
		p = done.Progress // as it was when the team finished
	}
	if e.json {
		if err := e.printNDJSON(map[string]any{"event": "summary", "workflow": final.Target, "progress": p,
			"interrupted": interrupted, "timed_out": timedOut}); err != nil {
			return err
		}
	} else if p != nil {
		e.printf("%s: %d run(s), %d failed, %d tokens in / %d out, $%.4f, %s\n", final.Target, p.Runs, p.FailedRuns,
			p.InputTokens, p.OutputTokens, p.CostUSD, (time.Duration(p.DurationMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	switch {
	case interrupted:
		return exitCode(130)
	case timedOut:
		fmt.Fprintf(e.stderr, "agent-worker: %s timed out after %s and was stopped\n", final.Target, timeout)
		return exitCode(1)
	case p != nil && len(p.Failed) > 0:
		fmt.Fprintf(e.stderr, "agent-worker: failed agents: %s (see `agent-worker info <agent>`)\n", strings.Join(p.Failed, ", "))
		return exitCode(1)
	case !untilIdle:
		return nil
	case done == nil:
		return errors.New("the daemon closed the stream before the team finished")
	}
	return nil
}
