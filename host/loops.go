package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/internal/backoff"
)

// vitalLoops runs the daemon's vital loops (the scheduler, the cluster
// member loop, the workflow and plugin watchers) as one group: the daemon
// is only worth answering while they run. The first loop Go started to
// end with an error is the reason the daemon stops (Run returns it, the
// process exits non-zero, and a service manager starts it again; a new
// daemon restores everything from the store). A loop GoRestart started
// (one that can start over: a file watcher) is restarted with backoff
// instead, and status lists it as a problem until it is. A loop that ends
// without an error, or because the daemon stops, ends quietly.
type vitalLoops struct {
	log hclog.Logger
	// fail names a loop the group replaces with one that ends with an
	// error at once (Config.FailLoop, a test hook).
	fail string

	once    sync.Once
	stopped chan error // the first loop's error; buffered, sent once

	// mu guards down.
	mu   sync.Mutex
	down map[string]string // loop → the problem status shows while it waits to restart
}

// restartBackoff is the wait before restarting a loop after its nth
// failure.
var restartBackoff = backoff.Policy{Base: time.Second, Max: time.Minute, Jitter: 0.1}

func newVitalLoops(log hclog.Logger, fail string) *vitalLoops {
	return &vitalLoops{log: log, fail: fail, stopped: make(chan error, 1), down: map[string]string{}}
}

// faulty is loop, or the test hook's failing stand-in for it.
func (g *vitalLoops) faulty(name string, loop func(context.Context) error) func(context.Context) error {
	if g.fail != name {
		return loop
	}
	g.log.Warn("test hook set: a vital loop fails at once", "loop", name)
	return func(context.Context) error { return errors.New("test hook: made to fail (Config.FailLoop)") }
}

// Go runs loop on wg until ctx ends; name is how the log and the error
// call it ("scheduler" gives "the scheduler stopped: …").
func (g *vitalLoops) Go(ctx context.Context, wg *sync.WaitGroup, name string, loop func(context.Context) error) {
	loop = g.faulty(name, loop)
	wg.Go(func() {
		err := loop(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		g.once.Do(func() {
			g.log.Error(fmt.Sprintf("the %s stopped: %v; stopping the daemon", name, err), "loop", name)
			g.stopped <- fmt.Errorf("the %s stopped: %w", name, err)
		})
	})
}

// Stopped delivers the error of the first vital loop that ended with one.
func (g *vitalLoops) Stopped() <-chan error { return g.stopped }

// GoRestart runs loop on wg until ctx ends, starting it again (with
// backoff) each time it ends with an error.
func (g *vitalLoops) GoRestart(ctx context.Context, wg *sync.WaitGroup, name string, loop func(context.Context) error) {
	loop = g.faulty(name, loop)
	wg.Go(func() {
		for n := 1; ; n++ {
			err := loop(ctx)
			if err == nil || ctx.Err() != nil {
				return
			}
			wait := restartBackoff.Delay(n, rand.Float64())
			g.log.Error(fmt.Sprintf("the %s stopped: %v; restarting it", name, err), "loop", name, "in", wait, "failures", n)
			g.setDown(name, fmt.Sprintf("the %s stopped (%v): restarting it at %s (failure %d)", name, err, time.Now().Add(wait).Format("15:04:05"), n))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			g.setDown(name, "")
		}
	})
}

func (g *vitalLoops) setDown(name, problem string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if problem == "" {
		delete(g.down, name)
	} else {
		g.down[name] = problem
	}
}

// Problems are the lines status shows for the loops waiting to restart.
func (g *vitalLoops) Problems() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Collect(maps.Values(g.down))
	slices.Sort(out)
	return out
}
