package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

func TestParseSpares(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in      string
		want    Spares
		wantErr string
	}{
		"empty is the default": {in: "", want: Spares{Default: 1}},
		"one count":            {in: "3", want: Spares{Default: 3}},
		"off":                  {in: "0", want: Spares{}},
		"per backend":          {in: "sdk=0,mock=2", want: Spares{Default: 1, Backends: map[string]int{"sdk": 0, "mock": 2}}},
		"both, spaced":         {in: " 2 , sdk = 0 ", want: Spares{Default: 2, Backends: map[string]int{"sdk": 0}}},
		"negative":             {in: "-1", wantErr: `"-1" is not a count from 0 to 16`},
		"too many":             {in: "mock=99", wantErr: `"99" is not a count from 0 to 16`},
		"not a number":         {in: "sdk=many", wantErr: "write N, or backend=N"},
		"bad backend name":     {in: "a b=1", wantErr: "backend"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSpares(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSpares(%q) = %+v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSpares(%q) (-want +got):\n%s", tc.in, diff)
			}
			again, err := ParseSpares(got.String())
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
	size := func(sp *sparePool) int {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.size("mock")
	}
	sp := newSparePool(Spares{Default: 1}, time.Hour, 4)
	if got := size(sp); got != 1 {
		t.Fatalf("size before any run = %d, want the configured 1", got)
	}
	var done []func()
	for range 3 {
		done = append(done, sp.demand("mock"))
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
		defer sp.demand("mock")()
	}
	if got := size(sp); got != 4 {
		t.Errorf("size with 6 runs at once = %d, want the run cap 4", got)
	}

	stale := newSparePool(Spares{Default: 1}, time.Nanosecond, 4)
	stale.demand("mock")()
	stale.demand("mock")()
	testkit.WaitFor(t, "the demand to be older than the idle time", func() bool { return size(stale) == 1 })

	off := newSparePool(Spares{Default: 1, Backends: map[string]int{"mock": 0}}, time.Hour, 4)
	for range 3 {
		defer off.demand("mock")()
	}
	if got := size(off); got != 0 {
		t.Errorf("size with spares off for the backend = %d, want 0", got)
	}
}
