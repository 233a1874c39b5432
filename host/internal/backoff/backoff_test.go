package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	jittered := Policy{Base: time.Second, Max: 10 * time.Minute, Jitter: 0.1}
	plain := Policy{Base: 200 * time.Millisecond, Max: 30 * time.Second}
	tests := map[string]struct {
		p    Policy
		n    int
		r    float64
		want time.Duration
	}{
		"first":                 {jittered, 1, 0.5, time.Second},
		"second doubles":        {jittered, 2, 0.5, 2 * time.Second},
		"tenth":                 {jittered, 10, 0.5, 512 * time.Second},
		"capped":                {jittered, 11, 0.5, 10 * time.Minute},
		"shift past the width":  {jittered, 70, 0.5, 10 * time.Minute},
		"just below the width":  {jittered, 62, 0.5, 10 * time.Minute},
		"jitter low":            {jittered, 3, 0, 3600 * time.Millisecond},
		"jitter high":           {jittered, 3, 1, 4400 * time.Millisecond},
		"capped, jitter low":    {jittered, 30, 0, 9 * time.Minute},
		"zero counts as first":  {jittered, 0, 0.5, time.Second},
		"no jitter ignores r":   {plain, 1, 0, 200 * time.Millisecond},
		"no jitter, doubled":    {plain, 4, 0.9, 1600 * time.Millisecond},
		"no jitter, capped":     {plain, 9, 0.3, 30 * time.Second},
		"base above max is max": {Policy{Base: time.Minute, Max: time.Second}, 1, 0.5, time.Second},
	}
	for name, tc := range tests {
		if got := tc.p.Delay(tc.n, tc.r).Round(time.Microsecond); got != tc.want {
			t.Errorf("%s: %+v.Delay(%d, %v) = %v, want %v", name, tc.p, tc.n, tc.r, got, tc.want)
		}
	}
}
