package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// sandboxRows adds mention → reply with the run sandbox off and on, with
// warm spares and with cold starts (a cold start pays the launcher's exec,
// a warm spare only the sdk's narrowing when its run arrives). Each pair is
// two fresh daemons side by side, one `--sandbox off` and one `--sandbox
// auto` (the default), and the messages alternate between them, the order
// swapped every round: the goal, ≤ 2 ms added to a run's start, is smaller
// than what a shared two-core machine drifts between two rows measured a
// minute apart.
//
// ts is the rows' TypeScript column.
func sandboxRows(ctx context.Context, cfg config, t *table, n func(full, quick int) int, ts string) error {
	warmFlags := cfg.sparesOn()
	for _, v := range []struct {
		what   string
		spares []string
		count  int
	}{
		{"warm spares", warmFlags, n(200, 20)},
		{"cold start", cfg.sparesOff, n(100, 10)},
	} {
		warm := len(v.spares) == 0 || v.spares[1] != "0"
		if !warm && v.what == "warm spares" { // -spares 0 asked for
			v.what = "no spares (-spares 0)"
		}
		step("mention → reply, %s, sandbox off and on, alternating", v.what)
		p, err := sandboxPair(ctx, cfg, v.spares, warm, v.count)
		if err != nil {
			return fmt.Errorf("mention → reply, %s, sandbox off and on: %w", v.what, err)
		}
		method := fmt.Sprintf("Two fresh daemons and homes started together, one `--sandbox off` and one `--sandbox auto` (the default; the row says what it "+
			"reported), %s; mention → reply as in its row, %d messages after 5 warm-ups on each, alternating between the daemons one message at a time and "+
			"swapping which goes first every round, so the machine's drift falls on both alike.", v.what, v.count)
		t.add(row{what: fmt.Sprintf("mention → reply in the channel, mock agent, %s, `--sandbox off`", v.what),
			ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p.off50), ms(p.off99)), ts: ts, method: method})
		t.add(row{what: fmt.Sprintf("mention → reply in the channel, mock agent, %s, `--sandbox auto` (the default): sandbox %s", v.what, p.on),
			ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p.on50), ms(p.on99)), ts: ts, method: method,
			ceiling: fmt.Sprintf("`--sandbox off` (row above): p50 %s ms, p99 %s ms; on − off: %+.1f ms at p50", ms(p.off50), ms(p.off99), float64((p.on50-p.off50).Microseconds())/1000),
			goal:    "≤ 2 ms over `--sandbox off`"})
	}
	return nil
}

// sandboxResult is one pair's figures, and the sandbox the "on" daemon
// reported.
type sandboxResult struct {
	off50, off99, on50, on99 time.Duration
	on                       api.SandboxInfo
}

// sandboxPair starts a `--sandbox off` and a `--sandbox auto` daemon with
// the daemon flags spares, and measures mention → reply on each, count
// times after 5 warm-ups, one message at a time, alternating between them.
// With warm, each message waits until both daemons have their mock spare
// ready, so neither is starting a process during the other's message.
func sandboxPair(ctx context.Context, cfg config, spares []string, warm bool, count int) (sandboxResult, error) {
	var res sandboxResult
	modes := []string{"off", "auto"}
	daemons := make([]*daemon, len(modes))
	for i, mode := range modes {
		home, err := tempHome(cfg, fmt.Sprintf("sandbox-%s-%d", mode, len(spares)))
		if err != nil {
			return res, err
		}
		d, err := startDaemon(ctx, cfg, home, append(slices.Clone(spares), "--sandbox", mode)...)
		if err != nil {
			return res, err
		}
		defer d.stop(ctx)
		daemons[i] = d
	}
	// Say what the daemons actually do: off must be off, and auto runs
	// unconfined where the kernel has no Landlock (the row then says so).
	hs := make([]api.Health, len(daemons))
	for i, d := range daemons {
		h, err := d.client.Health(ctx)
		if err != nil {
			return res, err
		}
		hs[i] = h
	}
	if hs[0].Sandbox.State != api.SandboxOff {
		return res, fmt.Errorf("daemon with --sandbox off reports sandbox %s", hs[0].Sandbox)
	}
	res.on = hs[1].Sandbox
	var warmOn []*api.Client
	if warm {
		warmOn = []*api.Client{daemons[0].client, daemons[1].client}
	}
	repliers := make([]*replier, len(daemons))
	for i, d := range daemons {
		r, err := newReplier(ctx, d.client, warmOn, "echo")
		if err != nil {
			return res, err
		}
		defer r.close()
		repliers[i] = r
	}
	lat := [2][]time.Duration{make([]time.Duration, 0, count), make([]time.Duration, 0, count)}
	for i := range count + 5 {
		for j := range repliers {
			k := (i + j) % len(repliers) // off first in even rounds, on first in odd ones
			el, err := repliers[k].round(ctx)
			if err != nil {
				return res, fmt.Errorf("--sandbox %s: %w", modes[k], err)
			}
			if i >= 5 {
				lat[k] = append(lat[k], el)
			}
		}
	}
	res.off50, res.off99 = percentiles(lat[0])
	res.on50, res.on99 = percentiles(lat[1])
	return res, nil
}
