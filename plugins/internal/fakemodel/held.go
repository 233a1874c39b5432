package fakemodel

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Held is a Server whose model requests stall until Release: a model that
// never answers, for tests that kill or time out a run while its CLI waits
// on the model.
type Held struct {
	*Server
	arrived, release chan struct{}
	arriveOnce       sync.Once
	releaseOnce      sync.Once
}

// NewHeld starts a server like New whose model requests (POSTs) wait until
// Release is called or their client goes away, then answer from turns.
// Liveness probes are answered at once.
func NewHeld(t testing.TB, turns ...Turn) *Held {
	h := StartHeld(turns...)
	t.Cleanup(h.Close)
	return h
}

// StartHeld is NewHeld for a process that is not a test; the caller closes
// it.
func StartHeld(turns ...Turn) *Held {
	h := &Held{Server: &Server{turns: turns, fallback: Turn{Text: "done"}},
		arrived: make(chan struct{}), release: make(chan struct{})}
	h.Server.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || r.Method == http.MethodGet {
			w.WriteHeader(http.StatusOK)
			return
		}
		h.arriveOnce.Do(func() { close(h.arrived) })
		select {
		case <-h.release:
			h.serve(w, r)
		case <-r.Context().Done():
		}
	}))
	return h
}

// Close releases held requests (the server waits for them) and stops.
func (h *Held) Close() {
	h.Release()
	h.Server.Close()
}

// Arrived is closed once the first model request is being held: the
// client is now waiting on the model.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release lets held and later requests through.
func (h *Held) Release() { h.releaseOnce.Do(func() { close(h.release) }) }
