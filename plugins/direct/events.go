package direct

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// sender is a run's way to the daemon. The tool loop and the heartbeat both
// send, so it serialises them; after the first failed Send it sends
// nothing more and cancels the run, since no one is listening.
type sender struct {
	events backend.Events
	cancel context.CancelFunc

	// mu guards the fields that follow.
	mu   sync.Mutex
	err  error
	last time.Time
}

func (s *sender) send(e backend.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if err := s.events.Send(e); err != nil {
		s.err = fmt.Errorf("sdk: send %s event: %w", e.Kind, err)
		s.cancel()
		return s.err
	}
	s.last = time.Now()
	return nil
}

// failed is the error of the failed Send, if one failed.
func (s *sender) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// heartbeat sends a heartbeat whenever the run has been silent for every;
// the returned function stops it and waits until it has stopped.
func (s *sender) heartbeat(ctx context.Context, every time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every / 2)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				s.mu.Lock()
				quiet := time.Since(s.last) >= every
				s.mu.Unlock()
				if quiet && s.send(backend.Event{Kind: backend.EventHeartbeat}) != nil {
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
