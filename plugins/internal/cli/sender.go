package cli

import (
	"sync"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Sender is a CLI run's way to the daemon. The CLI's stdout and stderr
// readers and the heartbeat all send, so it serialises them; after the
// first failed Send it sends nothing more and keeps that error, because the
// daemon has stopped listening and the run must end.
type Sender struct {
	events backend.Events

	// mu guards the field that follows.
	mu  sync.Mutex
	err error
}

// NewSender returns a Sender that passes events on to events.
func NewSender(events backend.Events) *Sender { return &Sender{events: events} }

// Send passes es on in order and returns the first failure, this call's or
// an earlier one's; nothing is sent after a failure.
func (s *Sender) Send(es ...backend.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range es {
		if s.err != nil {
			break
		}
		s.err = s.events.Send(e)
	}
	return s.err
}

// Failed is the error of the Send that failed, or nil while none has.
func (s *Sender) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
