package backendtest

import (
	"slices"
	"sync"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Recorder is a backend.Events that keeps everything a run sends, for a
// backend's own tests. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []backend.Event
}

var _ backend.Events = (*Recorder)(nil)

// Send records e.
func (r *Recorder) Send(e backend.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

// Events returns every event so far, in order.
func (r *Recorder) Events() []backend.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Of returns the events of the given kinds, in order.
func (r *Recorder) Of(kinds ...backend.EventKind) []backend.Event {
	var out []backend.Event
	for _, e := range r.Events() {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, e)
		}
	}
	return out
}
