package spares

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func TestParseSpares(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in      string
		want    Counts
		wantErr string
	}{
		"empty is the default": {in: "", want: Counts{Default: 1}},
		"one count":            {in: "3", want: Counts{Default: 3}},
		"off":                  {in: "0", want: Counts{}},
		"per backend":          {in: "sdk=0,mock=2", want: Counts{Default: 1, Backends: map[string]int{"sdk": 0, "mock": 2}}},
		"both, spaced":         {in: " 2 , sdk = 0 ", want: Counts{Default: 2, Backends: map[string]int{"sdk": 0}}},
		"negative":             {in: "-1", wantErr: `"-1" is not a count from 0 to 16`},
		"too many":             {in: "mock=99", wantErr: `"99" is not a count from 0 to 16`},
		"not a number":         {in: "sdk=many", wantErr: "write N, or backend=N"},
		"bad backend name":     {in: "a b=1", wantErr: "backend"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
			}
			again, err := Parse(got.String())
			if err != nil || !cmp.Equal(again, got) {
				t.Errorf("String %q does not read back: %+v, %v", got.String(), again, err)
			}
			if got.For("sdk") != tc.want.For("sdk") || got.For("other") != tc.want.Default {
				t.Errorf("For: sdk %d, other %d", got.For("sdk"), got.For("other"))
			}
		})
	}
}

// A pool grows to the most runs its backend had at once lately, up to the
// run cap, and back to its configured size once that demand is old.
func TestSparePoolGrowsWithDemand(t *testing.T) {
	t.Parallel()
	size := func(sp *Pool[*fakeProc]) int {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.size("mock")
	}
	sp := New(Config[*fakeProc]{Counts: Counts{Default: 1}, Idle: time.Hour, MaxRuns: 4})
	if got := size(sp); got != 1 {
		t.Fatalf("size before any run = %d, want the configured 1", got)
	}
	var done []func()
	for range 3 {
		done = append(done, sp.Demand("mock"))
	}
	if got := size(sp); got != 3 {
		t.Errorf("size with 3 runs at once = %d, want 3", got)
	}
	for _, d := range done {
		d()
		d() // a second call changes nothing
	}
	if got := size(sp); got != 3 {
		t.Errorf("size after those runs ended = %d, want 3 (recent demand)", got)
	}
	for range 6 {
		defer sp.Demand("mock")()
	}
	if got := size(sp); got != 4 {
		t.Errorf("size with 6 runs at once = %d, want the run cap 4", got)
	}

	stale := New(Config[*fakeProc]{Counts: Counts{Default: 1}, Idle: time.Nanosecond, MaxRuns: 4})
	stale.Demand("mock")()
	stale.Demand("mock")()
	testkit.WaitFor(t, "the demand to be older than the idle time", func() bool { return size(stale) == 1 })

	off := New(Config[*fakeProc]{Counts: Counts{Default: 1, Backends: map[string]int{"mock": 0}}, Idle: time.Hour, MaxRuns: 4})
	for range 3 {
		defer off.Demand("mock")()
	}
	if got := size(off); got != 0 {
		t.Errorf("size with spares off for the backend = %d, want 0", got)
	}
}

// fakeProc stands in for a plugin process where no process is started.
type fakeProc struct {
	pid    int
	exited bool
}

func (p *fakeProc) PID() int     { return p.pid }
func (p *fakeProc) Exited() bool { return p.exited }

// A pool's life with fake processes: a run's refill starts a spare, the
// next run takes it (and no other can), one that does not fit stays, an
// exited one is never handed out, and the pool's end kills what is left.
func TestPoolTakesKeepsAndKills(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	started, killed := map[string]*fakeProc{}, map[string]bool{}
	events := map[api.SpareEvent]int{}
	sp := New(Config[*fakeProc]{Counts: Counts{Default: 1}, Idle: time.Hour, Catalog: fakeCatalog{},
		Start: func(p api.Plugin, id string) (*fakeProc, error) {
			mu.Lock()
			defer mu.Unlock()
			x := &fakeProc{pid: len(started) + 100}
			started[id] = x
			return x, nil
		},
		Kill: func(id string, _ *fakeProc) {
			mu.Lock()
			defer mu.Unlock()
			killed[id] = true
		},
		Event: func(_ string, e api.SpareEvent) {
			mu.Lock()
			defer mu.Unlock()
			events[e]++
		},
	})
	mock := api.Plugin{Name: "mock", SHA256: "abc", Capabilities: []string{plugin.CapabilityRunEnv}}
	if sp.Serves(mock) {
		t.Fatal("a pool that is not running serves runs")
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); sp.Run(ctx) }()
	testkit.WaitFor(t, "the pool to run", func() bool { return sp.Serves(mock) })
	if sp.Serves(api.Plugin{Name: "old"}) {
		t.Error("a plugin without the run-env capability is served by spares")
	}
	fits := func(*fakeProc) Match { return Fits }
	if _, _, ok := sp.Take(mock, fits); ok {
		t.Fatal("a spare was taken before any was started")
	}
	sp.ColdStart("mock")
	sp.Refiller(mock)()
	testkit.WaitFor(t, "a spare to be ready", func() bool { return sp.Stats()["mock"].Live == 1 })
	if _, _, ok := sp.Take(mock, func(*fakeProc) Match { return Unfit }); ok {
		t.Fatal("a spare that does not fit was handed out")
	}
	if _, _, ok := sp.Take(api.Plugin{Name: "mock", SHA256: "other", Capabilities: mock.Capabilities}, fits); ok {
		t.Fatal("a spare of another binary was handed out")
	}
	proc, id, ok := sp.Take(mock, fits)
	if !ok || proc == nil || started[id] != proc {
		t.Fatalf("Take = %v, %q, %v; want the started spare", proc, id, ok)
	}
	if _, _, ok := sp.Take(mock, fits); ok {
		t.Fatal("one spare was handed to two runs")
	}
	sp.Refiller(mock)()
	testkit.WaitFor(t, "the pool to be refilled", func() bool { return sp.Stats()["mock"].Live == 1 })
	mu.Lock()
	for _, x := range started {
		if x != proc {
			x.exited = true // it died waiting for a run
		}
	}
	mu.Unlock()
	if _, _, ok := sp.Take(mock, fits); ok {
		t.Fatal("a spare that exited was handed out")
	}
	sp.Refiller(api.Plugin{Name: "mock", SHA256: "abc", Capabilities: mock.Capabilities})() // refilled once per run: a new func
	testkit.WaitFor(t, "a new spare", func() bool { return sp.Stats()["mock"].Live == 1 })
	stop()
	<-done
	want := api.SpareStats{Started: 3, Used: 1, ColdStarts: 1}
	if got := sp.Stats()["mock"]; got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range started {
		if !killed[id] && started[id] != proc {
			t.Errorf("spare %s was never killed", id)
		}
	}
	if killed[id] {
		t.Error("the spare a run took was killed by the pool")
	}
	if events[api.SpareKilled] != 2 || events[api.SpareTaken] != 1 {
		t.Errorf("events heard: %v", events)
	}
}

type fakeCatalog struct{}

func (fakeCatalog) Subscribe() (<-chan struct{}, func()) { return nil, func() {} }
func (fakeCatalog) Lookup(string, string) (api.Plugin, error) {
	return api.Plugin{}, errors.New("not found")
}
