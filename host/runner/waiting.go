package runner

import (
	"sync"
	"time"
)

// runTimers are a run's idle and run timeouts, which stop while the run
// waits for a person (Supervisor.Waiting).
type runTimers struct {
	mu         sync.Mutex
	idle       *time.Timer
	idleLimit  time.Duration
	deadline   *time.Timer
	deadlineAt time.Time
	left       time.Duration // what was left of the run timeout when the wait began
	waits      int           // gated calls waiting now
}

// timerSet holds the runs' timers by run id.
type timerSet struct {
	mu sync.Mutex
	m  map[string]*runTimers
}

func (ts *timerSet) put(runID string, t *runTimers) (remove func()) {
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*runTimers{}
	}
	ts.m[runID] = t
	ts.mu.Unlock()
	return func() {
		ts.mu.Lock()
		delete(ts.m, runID)
		ts.mu.Unlock()
	}
}

func (ts *timerSet) get(runID string) *runTimers {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[runID]
}

// Waiting stops the run's idle and run timeouts while it waits for a
// person to approve one of its actions: the wait is bounded by the
// approval's own timeout instead. resume starts them again: the idle
// timeout whole, the run timeout with what was left of it. An unknown run
// (ended, or another member's) is left alone.
func (s *Supervisor) Waiting(runID string) (resume func()) {
	t := s.timers.get(runID)
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	if t.waits++; t.waits == 1 {
		t.idle.Stop()
		t.deadline.Stop()
		t.left = max(time.Until(t.deadlineAt), 0)
	}
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.waits--; t.waits == 0 {
				t.idle.Reset(t.idleLimit)
				t.deadlineAt = time.Now().Add(t.left)
				t.deadline.Reset(t.left)
			}
		})
	}
}
