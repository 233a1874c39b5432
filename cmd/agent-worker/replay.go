package main

import (
	"context"
	"flag"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// runsReplayCmd is `runs replay <run-id>`: a recorded run again, in a
// scratch team, and where it parted from the recording.
func runsReplayCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("runs replay", flag.ContinueOnError)
	e.common(fs)
	return leaf("replay", "runs replay <run-id> [--json]",
		"run a recorded sdk or mock run again in a fresh plugin process and a scratch team (its model answers served back in order), and say where it diverged", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			ctx, stop := interruptible(ctx)
			defer stop()
			r, err := c.ReplayRun(ctx, args[0])
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(r)
			}
			e.printf("replayed %s as %s in %s: %s\n", r.Of, r.Run, r.Agent, r.State)
			if r.Error != "" {
				e.printf("error: %s\n", r.Error)
			}
			if r.PluginChanged != "" {
				e.printf("note: %s\n", r.PluginChanged)
			}
			for _, n := range r.Notes {
				e.printf("note: %s\n", n)
			}
			if d := r.Divergence; d != nil {
				if d.Step > 0 {
					e.printf("diverged at step %d (%s):\n", d.Step, d.What)
				} else {
					e.printf("diverged at the end:\n")
				}
				e.printf("  recorded: %s\n  replayed: %s\n", clip(d.Recorded, maxShown), clip(d.Replayed, maxShown))
			} else {
				e.printf("no divergence\n")
			}
			e.printf("transcript: agent-worker logs %s\n", r.Run)
			return nil
		})
}
