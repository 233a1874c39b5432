package gate

import (
	"context"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// An effort call of a run waits until the run's events show it, so the
// results reported before it are observed by then; each event lets one
// call through; a call from no run, of another tool or of an ended run
// does not wait.
func TestCaughtUp(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, 0) // Watch also moves the effort's heartbeat in the store
	// Only an event (or the context) may release a call here, and each
	// call that waits says so.
	g.calls.wait = time.Hour
	waiting := make(chan string, 10)
	g.calls.waiting = func(_, tool string) { waiting <- tool }
	ctx := context.Background()
	watch := g.Watch(alice, "run-1", t.TempDir())

	done := make(chan release, 1)
	go func() { done <- g.caughtUp(ctx, "run-1", "effort_finish") }()
	select {
	case tool := <-waiting:
		if tool != "effort_finish" {
			t.Fatalf("%s waits, want effort_finish", tool)
		}
	case r := <-done:
		t.Fatalf("effort_finish went on (%v) before the run's events showed it", r)
	case <-time.After(testkit.Deadline):
		t.Fatal("effort_finish neither waited nor went on")
	}
	watch(ctx, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c1", Name: "mcp__agent-worker__effort_finish"}})
	select {
	case r := <-done:
		if r != releaseShown {
			t.Fatalf("effort_finish went on: %v, want shown", r)
		}
	case <-time.After(testkit.Deadline):
		t.Fatal("effort_finish still waits after its tool_call event")
	}

	// Shown before it is asked: no wait; once passed, it is used up.
	watch(ctx, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c2", Name: "effort_continue"}})
	if r := g.caughtUp(ctx, "run-1", "effort_continue"); r != releaseShown {
		t.Errorf("a call already shown went on: %v, want shown", r)
	}
	if len(waiting) > 0 {
		t.Errorf("a call already shown waited")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if r := g.caughtUp(cancelled, "run-1", "effort_continue"); r != releaseCancelled {
		t.Errorf("a second call on one event went on: %v, want it to wait until cancelled", r)
	}
	select {
	case <-waiting: // it did wait
	default:
		t.Error("a second call on one event did not wait")
	}

	// These must not wait at all; the deadline only ends a broken one.
	bounded, stop := context.WithTimeout(ctx, testkit.Deadline)
	defer stop()
	for name, call := range map[string]func() release{
		"a call from no run":    func() release { return g.caughtUp(bounded, "", "effort_continue") },
		"another tool":          func() release { return g.caughtUp(bounded, "run-1", "effort_status") },
		"a call of a run ended": func() release { g.Ended("run-1"); return g.caughtUp(bounded, "run-1", "effort_continue") },
	} {
		if r := call(); r != releaseAtOnce {
			t.Errorf("%s went on: %v, want at once", name, r)
		}
	}
	if len(waiting) > 0 {
		t.Errorf("%s waited", <-waiting)
	}
}
