package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

// runEnd records what one run has taken, as it takes it, and is the one
// place that gives it back: end releases it in one documented order. Each
// field is set once the thing is taken; end skips what was never taken, so a
// run that fails at any point (its process does not start or handshake,
// crashes, times out, is cancelled, the daemon stops) leaves nothing behind.
type runEnd struct {
	s     *Supervisor
	runID string
	key   store.AgentKey
	log   hclog.Logger

	slot bool // s.running[key] is this run's: the agent may not run again yet
	live bool // s.live follows the run's transcript

	// rec is the run's transcript recorder, set once the run's row (and
	// its token) exists: the run's end is recorded only then.
	rec     *recorder
	started time.Time
	rc      *runContext // the run's context being read

	setup  func() // removes the per-run dirs
	demand func() // ends the run's demand on its backend's pool of spares
	refill func() // refills that pool, once
	proc   *process

	heartbeat func() // stops the heartbeat watcher and waits for it
	timers    func() // stops the run and idle timeouts and forgets them
	cancel    context.CancelCauseFunc

	// trace, in tests, hears each step end takes.
	trace func(step string)
}

// end ends the run, in this order; each step runs whatever the steps
// before it did (one that panics is logged, the rest still run, and the
// panic goes on after them):
//
//  1. heartbeat: the watcher stops pinging the process;
//  2. timers: the run and idle timeouts stop, and Waiting no longer
//     finds them;
//  3. cancel: the run's context ends;
//  4. refill: the backend's pool of spares is refilled (if the run had no
//     event to do it earlier), then the run's demand on it ends;
//  5. context: the reading of the run's context is waited for;
//  6. record: the recorder stops and finish records the run's end with
//     its last events (or Settle settles a success), then the Observer
//     hears it;
//  7. live: followers of the transcript read it final;
//  8. slot: the agent may run again, so a settled reply can wake it at
//     once, while
//  9. process: the plugin process, its process group and cgroup are
//     killed and its socket directory removed;
//  10. dirs: the per-run directories go;
//  11. worker: the workers row goes last, so a daemon that dies before
//     still finds the process to reap.
//
// It returns the run's error, which a failed settle replaces.
func (e *runEnd) end(ctx context.Context, spec runspec.RunSpec, out *runspec.Outcome, err error) error {
	var panicked any
	step := func(name string, f func()) {
		if e.trace != nil {
			e.trace(name)
		}
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("end of run: a step panicked; the others still run", "step", name, "panic", fmt.Sprint(p))
				if panicked == nil {
					panicked = p
				}
			}
		}()
		f()
	}
	if e.heartbeat != nil {
		step("heartbeat", e.heartbeat)
	}
	if e.timers != nil {
		step("timers", e.timers)
	}
	if e.cancel != nil {
		step("cancel", func() { e.cancel(nil) })
	}
	if e.refill != nil {
		step("refill", e.refill)
	}
	if e.demand != nil {
		step("demand", e.demand)
	}
	if e.rc != nil {
		step("context", func() { e.rc.get() })
	}
	if e.rec != nil {
		step("record", func() {
			out.Unwritten = e.rec.close()
			err = e.s.finish(ctx, spec, out, err, e.log)
		})
		step("observe", func() { e.s.observeEnd(spec.Agent, out, e.started) })
	}
	if e.live {
		step("live", func() { e.s.live.end(e.runID) })
	}
	if e.slot {
		step("slot", func() {
			e.s.mu.Lock()
			delete(e.s.running, e.key)
			e.s.mu.Unlock()
		})
	}
	if e.proc != nil {
		step("process", func() {
			e.proc.stop()
			e.s.cfg.Observer.PluginStopped(plugin.KindBackend)
		})
	}
	if e.setup != nil {
		step("dirs", e.setup)
	}
	if e.proc != nil {
		step("worker", func() {
			if err := e.s.db.RemoveWorker(context.Background(), e.runID); err != nil {
				// Harmless: the next daemon's Reap finds the process gone.
				e.log.Warn("forget the run's plugin process", "error", err)
			}
		})
	}
	if panicked != nil {
		panic(panicked)
	}
	return err
}
