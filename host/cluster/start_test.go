package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The job queue's start waits out a store that does not answer (a
// PostgreSQL restart as the daemon comes up), returns any other failure
// at once, and gives up quietly when the daemon stops meanwhile.
func TestStartQueueWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	down := errors.New("dial tcp: connection refused")
	log := hclog.NewNullLogger()

	t.Run("outage then up", func(t *testing.T) {
		t.Parallel()
		starts, pings := 0, 0
		start := func(context.Context) error {
			starts++
			if starts < 3 {
				return down
			}
			return nil
		}
		ping := func(context.Context) error { pings++; return down }
		if err := startQueue(t.Context(), start, ping, log); err != nil || starts != 3 || pings != 2 {
			t.Errorf("startQueue = %v after %d starts and %d pings; want nil after 3 starts", err, starts, pings)
		}
	})
	t.Run("store answers", func(t *testing.T) {
		t.Parallel()
		bad := errors.New("at least one Worker must be added")
		starts := 0
		start := func(context.Context) error { starts++; return bad }
		ping := func(context.Context) error { return nil }
		if err := startQueue(t.Context(), start, ping, log); !errors.Is(err, bad) || starts != 1 {
			t.Errorf("startQueue = %v after %d starts; want the start's own error at once", err, starts)
		}
	})
	t.Run("stopped during the outage", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		start := func(context.Context) error { return down }
		ping := func(context.Context) error { cancel(); return down } // the daemon stops while the store is down
		done := make(chan error, 1)
		go func() { done <- startQueue(ctx, start, ping, log) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("startQueue = %v; want nil once the daemon stops", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("startQueue went on after the daemon stopped")
		}
	})
}
