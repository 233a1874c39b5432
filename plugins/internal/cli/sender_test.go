package cli

import (
	"errors"
	"sync"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// TestSenderStopsAtFirstFailure: once the daemon stops listening, no later
// event is sent, every later Send reports that first failure, and events
// from several readers at once all arrive.
func TestSenderStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	gone := errors.New("daemon gone")
	var mu sync.Mutex
	var sent []string
	s := NewSender(backend.EventsFunc(func(e backend.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Text == "fail" {
			return gone
		}
		sent = append(sent, e.Text)
		return nil
	}))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if err := s.Send(backend.Event{Kind: backend.EventLog, Text: "x"}); err != nil {
					t.Errorf("Send before any failure: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if len(sent) != 100 || s.Failed() != nil {
		t.Fatalf("sent %d events, Failed %v; want 100 and nil", len(sent), s.Failed())
	}
	err := s.Send(backend.Event{Text: "a"}, backend.Event{Text: "fail"}, backend.Event{Text: "b"})
	if !errors.Is(err, gone) || !errors.Is(s.Failed(), gone) {
		t.Errorf("Send = %v, Failed = %v; want %v", err, s.Failed(), gone)
	}
	if err := s.Send(backend.Event{Text: "c"}); !errors.Is(err, gone) {
		t.Errorf("Send after the failure = %v, want %v", err, gone)
	}
	if n := len(sent); n != 101 || sent[n-1] != "a" {
		t.Errorf("sent after the failure: %q, want only a before it", sent[100:])
	}
}
