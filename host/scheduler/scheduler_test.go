package scheduler

import (
	"testing"
	"time"
)

func TestRetryDelayDoubles(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		n    int
		r    float64
		want time.Duration
	}{
		"first, no jitter":      {1, 0.5, time.Second},
		"second, no jitter":     {2, 0.5, 2 * time.Second},
		"third, no jitter":      {3, 0.5, 4 * time.Second},
		"third, lowest jitter":  {3, 0, 3600 * time.Millisecond},
		"third, highest jitter": {3, 1, 4400 * time.Millisecond},
		"capped":                {20, 0.5, maxRetryDelay},
		"shift past the width":  {70, 0.5, maxRetryDelay},
	}
	for name, tc := range tests {
		if got := retryDelay(time.Second, tc.n, tc.r); got != tc.want {
			t.Errorf("%s: retryDelay(1s, %d, %v) = %v, want %v", name, tc.n, tc.r, got, tc.want)
		}
	}
}
