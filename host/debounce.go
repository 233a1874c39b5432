package host

import (
	"context"
	"time"
)

// debouncer turns a burst of file events into one notice per path, once
// the path has been quiet for a while: editors and installers produce many
// events for one change (reference/go-libraries.md §6). Only the goroutine
// that owns it calls touch, done and stop; notices arrive on C.
type debouncer struct {
	wait   time.Duration
	timers map[string]*time.Timer
	C      chan string
}

func newDebouncer(wait time.Duration) *debouncer {
	return &debouncer{wait: wait, timers: map[string]*time.Timer{}, C: make(chan string, 64)}
}

// touch records an event for path, restarting its quiet period.
func (d *debouncer) touch(ctx context.Context, path string) {
	if t := d.timers[path]; t != nil {
		t.Reset(d.wait)
		return
	}
	d.timers[path] = time.AfterFunc(d.wait, func() {
		select {
		case d.C <- path:
		case <-ctx.Done():
		}
	})
}

// done forgets path after its notice was handled.
func (d *debouncer) done(path string) { delete(d.timers, path) }

// stop cancels every pending notice.
func (d *debouncer) stop() {
	for _, t := range d.timers {
		t.Stop()
	}
}
