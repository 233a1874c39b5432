package team

import (
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/store"
)

// A session silent for StaleAfter is stale: one sweep tells its team once
// that the agent is idle again; further sweeps of the same silence say
// nothing; a hook makes it fresh, and a new silence is told again. The
// clock is the store's and the sweep's, moved by hand.
func TestStaleSessionsToldOnce(t *testing.T) {
	t.Parallel()
	svc, db, clk := boardTeam(t, "me", "alice")
	me := store.AgentKey{Name: "me", Workflow: board.Workflow, Tag: board.Tag}
	s, err := db.HeartbeatSession(t.Context(), me, "sess-1", "/src/p")
	if err != nil {
		t.Fatal(err)
	}
	w := NewStaleSessions(svc, clk.Now)
	notices := func() []string {
		t.Helper()
		ms, err := db.ReadChannel(t.Context(), board, store.ReadOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if strings.Contains(m.Content, "is idle again") {
				out = append(out, m.Content)
			}
		}
		return out
	}
	sweep := func(want int) {
		t.Helper()
		if n, err := w.Sweep(t.Context()); err != nil || n != want {
			t.Fatalf("sweep at +%v announced %d (%v), want %d", clk.Now().Sub(boardT0), n, err, want)
		}
	}

	clk.Set(boardT0.Add(StaleAfter - time.Second))
	if SessionStale(s, clk.Now()) {
		t.Fatal("stale before StaleAfter")
	}
	sweep(0)
	clk.Set(boardT0.Add(StaleAfter + time.Minute))
	if !SessionStale(s, clk.Now()) {
		t.Fatal("not stale after StaleAfter")
	}
	sweep(1)
	sweep(0)
	got := notices()
	if len(got) != 1 || !strings.Contains(got[0], "sess-1") || !strings.Contains(got[0], "6m0s") {
		t.Fatalf("notices = %q, want one naming the session and its silence", got)
	}

	if _, err := db.HeartbeatSession(t.Context(), me, "sess-1", "/src/p"); err != nil { // it comes back
		t.Fatal(err)
	}
	sweep(0)
	clk.Set(clk.Now().Add(StaleAfter))
	sweep(1)
	if got := notices(); len(got) != 2 {
		t.Errorf("after a second silence: %d notices, want 2", len(got))
	}
}
