package gate

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/workflow/skill"
)

// catchUpWait bounds how long an effort tool call of a run waits for the
// run's events to show it: a backend that reports no tool calls costs
// this much per call, and is checked as it stands.
const catchUpWait = 2 * time.Second

// checkingTools are the effort tools that check a phase's evidence.
var checkingTools = []string{"effort_continue", "effort_finish"}

// runCalls counts, for one run, the calls of checkingTools its event
// stream has shown and those CaughtUp let through.
type runCalls struct {
	shown, passed map[string]int
	changed       chan struct{} // closed, and replaced, when shown grows
}

// catchUp is the per-run state of CaughtUp, kept from Watch to Ended.
type catchUp struct {
	// wait is the most a call waits (catchUpWait; a test lengthens it so
	// that only an event can release a call), and waiting, when set, hears
	// of each call that starts to wait (tests); both are set before use.
	wait    time.Duration
	waiting func(runID, tool string)

	// mu guards the field that follows.
	mu   sync.Mutex
	runs map[string]*runCalls
}

// release is why CaughtUp let a call go on.
type release int

const (
	releaseAtOnce    release = iota // it needs no wait: another tool, no run, or a run not watched
	releaseShown                    // the run's events showed the call
	releaseTimedOut                 // the wait ran out first
	releaseCancelled                // the call's context ended first
)

func (r release) String() string {
	return [...]string{"at once", "shown", "timed out", "cancelled"}[r]
}

func (c *catchUp) watch(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]*runCalls{}
	}
	c.runs[runID] = &runCalls{shown: map[string]int{}, passed: map[string]int{}, changed: make(chan struct{})}
}

// shown notes that the run's events showed a call of tool.
func (c *catchUp) shown(runID, tool string) {
	tool = skill.ToolName(tool)
	if !slices.Contains(checkingTools, tool) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := c.runs[runID]; rc != nil {
		rc.shown[tool]++
		close(rc.changed)
		rc.changed = make(chan struct{})
	}
}

// Ended forgets run runID's state; its events are over.
func (g *Gate) Ended(runID string) {
	g.calls.mu.Lock()
	delete(g.calls.runs, runID)
	g.calls.mu.Unlock()
}

// CaughtUp waits until the events of run runID have shown its call of
// tool (effort_continue or effort_finish), at most catchUpWait. A run's
// events stream to the daemon apart from its MCP calls, so without this
// a phase could be checked before the daemon has read the tool results
// that came just before the call: a `go test` that passed, then at once
// effort_finish. A backend reports a call before it makes it, and the
// stream keeps order, so once the call is shown every earlier result
// has been observed. Another tool, a call from no run (an outside agent)
// or a run not watched returns at once.
func (g *Gate) CaughtUp(ctx context.Context, runID, tool string) {
	if g.caughtUp(ctx, runID, tool) == releaseTimedOut {
		g.log.Debug("effort call checked before the run's events showed it", "run", runID, "tool", tool)
	}
}

// caughtUp is CaughtUp, saying why it returned.
func (g *Gate) caughtUp(ctx context.Context, runID, tool string) release {
	if runID == "" || !slices.Contains(checkingTools, tool) {
		return releaseAtOnce
	}
	timer := time.NewTimer(g.calls.wait)
	defer timer.Stop()
	for waited := false; ; waited = true {
		g.calls.mu.Lock()
		rc := g.calls.runs[runID]
		if rc == nil {
			g.calls.mu.Unlock()
			return releaseAtOnce
		}
		if rc.shown[tool] > rc.passed[tool] {
			rc.passed[tool]++
			g.calls.mu.Unlock()
			return releaseShown
		}
		changed := rc.changed
		g.calls.mu.Unlock()
		if !waited && g.calls.waiting != nil {
			g.calls.waiting(runID, tool)
		}
		select {
		case <-changed:
		case <-timer.C:
			// Counted as passed: when the event comes after all, the
			// next call does not pass on it.
			g.calls.mu.Lock()
			rc.passed[tool]++
			g.calls.mu.Unlock()
			return releaseTimedOut
		case <-ctx.Done():
			return releaseCancelled
		}
	}
}
