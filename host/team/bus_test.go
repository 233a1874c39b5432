package team

import (
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/store"
)

// A subscriber that stops reading is dropped and told so; publishing goes
// on, and a subscriber that keeps up still gets every event.
func TestStalledSubscriberIsDropped(t *testing.T) {
	var b Bus
	stalled := b.Subscribe(4)
	defer stalled.Close()
	reader := b.Subscribe(100)
	defer reader.Close()
	const n = 50
	got := make(chan int, 1)
	go func() {
		seen := 0
		for range n {
			ev := <-reader.C
			if ev.Kind == EventAgentState {
				seen++
			}
		}
		got <- seen
	}()
	for i := range n {
		b.Publish(Event{Kind: EventAgentState, Agent: store.AgentKey{Name: "a"}, State: string(rune('a' + i%26))})
	}
	select {
	case <-stalled.Dropped():
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled subscriber was never told it was dropped")
	}
	select {
	case seen := <-got:
		if seen != n {
			t.Errorf("the reading subscriber got %d of %d events", seen, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reading subscriber did not get every event")
	}
	select {
	case <-reader.Dropped():
		t.Error("the subscriber that kept up was dropped")
	default:
	}
	// What was queued before the drop is still readable; nothing after.
	if len(stalled.C) != 4 {
		t.Errorf("stalled queue holds %d events, want the 4 it had room for", len(stalled.C))
	}
}
