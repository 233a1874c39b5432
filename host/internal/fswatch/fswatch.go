// Package fswatch is the one fsnotify loop of the daemon: it turns the
// bursts of events an editor or an installer makes for one change into one
// notice per path, once the path has been quiet for a while
// (reference/go-libraries.md §6). The plugin catalog and the workflow
// watcher both run it; it imports nothing of the daemon.
package fswatch

import (
	"context"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Handler says what a Run loop does with what it sees. Every func runs on
// the loop's goroutine, so a handler needs no lock of its own for state
// only it touches; a slow one should hand work off.
type Handler struct {
	// Keep filters events: only paths it accepts are debounced.
	Keep func(fsnotify.Event) bool
	// Settled is called once per path after its events have stopped for
	// the quiet period.
	Settled func(path string)
	// Error is told the watcher's errors (e.g. fsnotify.ErrEventOverflow,
	// after which a caller rescans).
	Error func(error)
	// Tick, when set, calls OnTick on every tick: a slow safety net.
	Tick   <-chan time.Time
	OnTick func()
}

// Run loops until ctx ends or the watcher is closed. It does not close w.
func Run(ctx context.Context, w *fsnotify.Watcher, quiet time.Duration, h Handler) {
	d := &debouncer{wait: quiet, timers: map[string]*time.Timer{}, c: make(chan string, 64)}
	defer d.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if h.Keep(ev) {
				d.touch(ctx, ev.Name)
			}
		case path := <-d.c:
			delete(d.timers, path)
			h.Settled(path)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			if h.Error != nil {
				h.Error(err)
			}
		case <-h.Tick:
			h.OnTick()
		}
	}
}

// debouncer holds one quiet-period timer per path; only Run's goroutine
// touches it, and its timers deliver on c.
type debouncer struct {
	wait   time.Duration
	timers map[string]*time.Timer
	c      chan string
}

// touch records an event for path, restarting its quiet period.
func (d *debouncer) touch(ctx context.Context, path string) {
	if t := d.timers[path]; t != nil {
		t.Reset(d.wait)
		return
	}
	d.timers[path] = time.AfterFunc(d.wait, func() {
		select {
		case d.c <- path:
		case <-ctx.Done():
		}
	})
}

// stop cancels every pending notice.
func (d *debouncer) stop() {
	for _, t := range d.timers {
		t.Stop()
	}
}
