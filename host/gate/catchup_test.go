package gate

import (
	"context"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// An effort call of a run waits until the run's events show it, so the
// results reported before it are observed by then; each event lets one
// call through; a call from no run, of another tool or of an ended run
// does not wait.
func TestCaughtUp(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, 0) // Watch also moves the effort's heartbeat in the store
	ctx := context.Background()
	watch := g.Watch(alice, "run-1", t.TempDir())

	done := make(chan struct{})
	go func() {
		g.CaughtUp(ctx, "run-1", "effort_finish")
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("effort_finish went on before the run's events showed it")
	case <-time.After(50 * time.Millisecond): // it must still be waiting
	}
	watch(ctx, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c1", Name: "mcp__agent-worker__effort_finish"}})
	select {
	case <-done:
	case <-time.After(catchUpWait / 2):
		t.Fatal("effort_finish still waits after its tool_call event")
	}

	// Shown before it is asked: no wait; once passed, it is used up.
	watch(ctx, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c2", Name: "effort_continue"}})
	start := time.Now()
	g.CaughtUp(ctx, "run-1", "effort_continue")
	if d := time.Since(start); d > catchUpWait/2 {
		t.Errorf("a call already shown waited %v", d)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	g.CaughtUp(cancelled, "run-1", "effort_continue") // would wait: the one shown is used

	start = time.Now()
	g.CaughtUp(ctx, "", "effort_continue")
	g.CaughtUp(ctx, "run-1", "effort_status")
	g.Ended("run-1")
	g.CaughtUp(ctx, "run-1", "effort_continue")
	if d := time.Since(start); d > catchUpWait/2 {
		t.Errorf("calls that need not wait waited %v", d)
	}
}
