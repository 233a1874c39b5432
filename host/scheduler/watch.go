package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// AskQueue is how many run events an ask client may have unread before
// it is dropped: far more than a model streams while a healthy client
// takes one write.
const AskQueue = 1024

// RunWatch follows the run that handles one message, for ask/serve. The
// run's events go into a bounded queue that the watcher drains on its own
// goroutine, so a slow client never holds up the run or the agent loop.
type RunWatch struct {
	l       *agentLoop
	seq     int64              // the message; 0 until Arm
	events  chan backend.Event // nil for a watch of the outcome only
	dropped chan struct{}      // closed when events overflowed
	done    chan WatchResult   // capacity 1
	active  bool               // attached to the run in flight
}

// WatchResult is how the run that handled a watched message ended.
type WatchResult struct {
	Out runspec.Outcome
	Err error
}

// Watch registers interest in an agent's runs before the caller writes its
// message; Arm then names the message. This order means no run can handle
// the message unseen. With queue > 0, the run's events arrive on Events; a
// watcher that leaves more than queue of them unread is dropped (Dropped
// closes) and the run carries on without it.
func (s *Scheduler) Watch(key store.AgentKey, queue int) (*RunWatch, error) {
	l := s.loopOf(key)
	if l == nil {
		return nil, api.Errorf(api.CodeConflict, "%s is not scheduled: it is stopped, or its workflow is", key)
	}
	w := &RunWatch{l: l, dropped: make(chan struct{}), done: make(chan WatchResult, 1)}
	if queue > 0 {
		w.events = make(chan backend.Event, queue)
	}
	l.mu.Lock()
	l.watches = append(l.watches, w)
	l.mu.Unlock()
	return w, nil
}

// Arm names the message the watch waits for.
func (w *RunWatch) Arm(seq int64) {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	w.seq = seq
	switch {
	case l.runCancel != nil && l.until >= seq:
		w.active = true // the run in flight was shown it
	case l.runCancel == nil && l.last.Out.Run.InboxUntilSeq >= seq && l.last.Err == nil:
		w.done <- l.last // a run already handled it
		w.removeLocked()
	}
}

// Done delivers the outcome of the run that handled the message. Events
// the run sent before it ended are already queued on Events.
func (w *RunWatch) Done() <-chan WatchResult { return w.done }

// Events delivers the run's events (nil without a queue: never ready).
func (w *RunWatch) Events() <-chan backend.Event { return w.events }

// Dropped is closed when the watcher fell behind the run's events and was
// detached; the run goes on and its reply lands in the channel as usual.
func (w *RunWatch) Dropped() <-chan struct{} { return w.dropped }

// Stop stops watching; with cancelRun, a run in flight for the message is
// cancelled (the user gave up) and not retried.
func (w *RunWatch) Stop(cancelRun bool) {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	w.removeLocked()
	if cancelRun && w.active && l.runCancel != nil {
		l.runCancel(errUserCancel)
	}
}

func (w *RunWatch) removeLocked() {
	ws := w.l.watches
	for i, x := range ws {
		if x == w {
			w.l.watches = append(ws[:i], ws[i+1:]...)
			return
		}
	}
}

// startRun marks the run in flight and attaches the watches it covers.
func (l *agentLoop) startRun(cancel context.CancelCauseFunc, until int64, runID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runCancel, l.until, l.runID, l.runDone = cancel, until, runID, make(chan struct{})
	for _, w := range l.watches {
		if w.seq > 0 && w.seq <= until {
			w.active = true
		}
	}
}

// endRun marks that no run is in flight; the run's end is recorded by then.
func (l *agentLoop) endRun() {
	l.mu.Lock()
	if l.runDone != nil {
		close(l.runDone)
	}
	l.runCancel, l.until, l.runID, l.runDone = nil, 0, "", nil
	l.mu.Unlock()
}

// forward queues a run event for the streaming watches attached to the
// run. It never blocks and calls no watcher's code: a watch whose queue is
// full is dropped.
func (l *agentLoop) forward(e backend.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.watches[:0]
	for _, w := range l.watches {
		if w.active && w.events != nil {
			select {
			case w.events <- e:
			default:
				close(w.dropped) // and no outcome: it is detached
				continue
			}
		}
		kept = append(kept, w)
	}
	clear(l.watches[len(kept):])
	l.watches = kept
}

// finishAll reports a final outcome to the attached watches (to every watch
// when all is set, e.g. the agent was removed).
func (l *agentLoop) finishAll(out runspec.Outcome, err error, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = WatchResult{out, err}
	kept := l.watches[:0]
	for _, w := range l.watches {
		if w.active || all {
			w.done <- WatchResult{out, err}
			continue
		}
		kept = append(kept, w)
	}
	l.watches = kept
}

// finishRemote reports to the watches here a run another cluster member
// ran (the watch's message was in its inbox): its outcome is read back
// from the store, where the member recorded it.
func (s *Scheduler) finishRemote(ctx context.Context, l *agentLoop, runID string) {
	r, events, err := s.db.GetRun(ctx, runID)
	if err != nil || r.InboxUntilSeq == 0 {
		return
	}
	out := runspec.Outcome{Run: r}
	var runErr error
	if r.State != api.RunSucceeded {
		// A failed attempt is retried by the queue; only the last one,
		// which fails the agent, is the asker's answer.
		if a, err := s.db.GetAgent(ctx, l.key); err != nil || a.State != api.AgentFailed {
			return
		}
		runErr = fmt.Errorf("the run on member %s ended %s: %s", r.Daemon, r.State, r.Error)
	}
	for _, e := range events {
		switch backend.EventKind(e.Kind) {
		case backend.EventResult:
			var d struct{ Text string }
			if json.Unmarshal([]byte(e.Data), &d) == nil {
				out.Result = d.Text
			}
		case backend.EventUsage:
			var u backend.Usage
			if json.Unmarshal([]byte(e.Data), &u) == nil {
				out.Usage = u
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runCancel != nil {
		return // a run here is under way: it reports itself
	}
	kept := l.watches[:0]
	for _, w := range l.watches {
		if w.seq > 0 && w.seq <= r.InboxUntilSeq {
			w.done <- WatchResult{out, runErr}
			continue
		}
		kept = append(kept, w)
	}
	clear(l.watches[len(kept):])
	l.watches = kept
}
