package scheduler

import "github.com/agent-worker/agent-worker/store"

// What a loop is doing, for tests that must tell that nothing will run:
// with a fake clock, a loop that has taken in every wake asked of it and
// waits for its next trigger runs nothing until a new wake or the clock
// moves, and a run that waits for a slot starts only once one is free.

// park records that the loop waits for its next trigger (on), or that
// one came (off): a wake is then taken in, with every wake asked so far,
// since the pass that follows reads the agent afresh.
func (l *agentLoop) park(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parked = on
	if !on {
		l.seen = l.asked
	}
}

// waitSlot records that the loop's run waits for a free slot.
func (l *agentLoop) waitSlot(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slotWait = on
}

// quiet reports whether every loop waits for its next trigger with no
// wake pending: it has handled every wake handed to it (Run may still
// hold one it read from the bus; see afterEvent).
func (s *Scheduler) quiet() bool {
	s.mu.Lock()
	loops := make([]*agentLoop, 0, len(s.loops))
	for _, l := range s.loops {
		loops = append(loops, l)
	}
	s.mu.Unlock()
	for _, l := range loops {
		l.mu.Lock()
		q := l.parked && l.seen == l.asked
		l.mu.Unlock()
		if !q {
			return false
		}
	}
	return true
}

// waitsForSlot reports whether the agent's run waits for a free slot.
func (s *Scheduler) waitsForSlot(key store.AgentKey) bool {
	l := s.loopOf(key)
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slotWait
}
