package scheduler

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// fakeQueue stands for the cluster's job queue, which a test drives
// itself through Turn.
type fakeQueue struct{}

func (fakeQueue) Enqueue(context.Context, store.AgentKey) (bool, error) { return false, nil }
func (fakeQueue) Fire(context.Context, store.AgentKey, time.Time) error { return nil }

// runs counts the runs it is asked for and runs nothing.
type runs struct{ n int }

func (r *runs) Run(context.Context, runspec.RunSpec) (runspec.Outcome, error) {
	r.n++
	return runspec.Outcome{}, nil
}

// A member asks for the wake-up that its own reading of the agent's last
// activity makes due; one that read it before a run ended asks too early.
// Turn lets only a wake-up the store still makes due go ahead: a stale one
// posts nothing, and the next is counted from the last activity.
func TestStaleScheduledWakeUpPostsNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	created := time.UnixMilli(time.Now().UnixMilli())
	var mu sync.Mutex
	now := created
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "aw.db"), store.Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key := store.AgentKey{Name: "ticker", Workflow: "global", Tag: "main"}
	if _, err := db.CreateAgent(ctx, store.Agent{Name: key.Name, Workflow: key.Workflow, Tag: key.Tag, Backend: "mock", Schedule: "1h"}); err != nil {
		t.Fatal(err)
	}
	r := &runs{}
	s := New(db, r, team.New(team.Config{DB: db, Logger: hclog.NewNullLogger()}), Config{}, hclog.NewNullLogger())
	s.SetDispatcher(fakeQueue{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wakeUps := func() int {
		t.Helper()
		ms, err := db.ReadChannel(ctx, key.Scope(), store.ReadOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range ms {
			if m.Sender == team.SenderSystem && strings.HasPrefix(m.Content, "@ticker ") {
				n++
			}
		}
		return n
	}

	// Due an hour after the agent's last activity (its creation): a
	// wake-up for half an hour after it is stale.
	due := created.Add(time.Hour)
	if busy, err := s.Turn(ctx, key, created.Add(30*time.Minute), 1, 3, nil); busy || err != nil {
		t.Fatalf("stale wake-up: busy %v, %v", busy, err)
	}
	if n := wakeUps(); n != 0 || r.n != 0 {
		t.Errorf("a stale wake-up posted %d wake-ups and started %d runs, want none", n, r.n)
	}

	// The wake-up due goes ahead.
	if busy, err := s.Turn(ctx, key, due, 1, 3, nil); busy || err != nil {
		t.Fatalf("wake-up due: busy %v, %v", busy, err)
	}
	if n := wakeUps(); n != 1 || r.n != 1 {
		t.Errorf("the wake-up due posted %d wake-ups and started %d runs, want 1 and 1", n, r.n)
	}

	// What the loops ask for next: an hour after the last activity, or
	// after the last wake-up fired when no run ended since (this test's
	// runner records none, as with a paused workflow).
	a, err := db.GetAgent(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	next := func(fired time.Time) time.Time {
		t.Helper()
		at, ok, err := s.nextDue(ctx, a, fired)
		if err != nil || !ok {
			t.Fatalf("nextDue: %v %v", ok, err)
		}
		return at
	}
	if got := next(due); !got.Equal(due.Add(time.Hour)) {
		t.Errorf("after a wake-up that left no run: next at %v, want %v", got, due.Add(time.Hour))
	}
	// A run ends ten minutes after that wake-up; a member that had not
	// read its end fires one twenty minutes later, which is stale. The
	// next is an hour after the run, not an hour after the stale one.
	mu.Lock()
	now = due.Add(10 * time.Minute)
	mu.Unlock()
	run, err := db.StartRun(ctx, store.Run{ID: "run-1", Agent: key, Backend: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, run.ID, api.RunSucceeded, "", nil); err != nil {
		t.Fatal(err)
	}
	stale := due.Add(30 * time.Minute)
	if busy, err := s.Turn(ctx, key, stale, 1, 3, nil); busy || err != nil || wakeUps() != 1 {
		t.Errorf("stale wake-up after the run: busy %v, %v, %d wake-ups; want nothing posted", busy, err, wakeUps())
	}
	if got, want := next(stale), due.Add(70*time.Minute); !got.Equal(want) {
		t.Errorf("after a stale wake-up: next at %v, want %v (an hour after the run)", got, want)
	}
}
