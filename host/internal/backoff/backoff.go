// Package backoff is the daemon's one doubling backoff: how long to wait
// after the nth failure of something retried (a run, a webhook delivery,
// a crashed documents provider, a vital loop). It imports nothing of the
// daemon.
package backoff

import "time"

// Policy says how waits grow: Base after the first failure, doubling
// after each further one up to Max, each spread by ±Jitter (a fraction of
// the wait, 0 for none) so that things that failed together do not retry
// together.
type Policy struct {
	Base, Max time.Duration
	Jitter    float64
}

// Delay is the wait after failed attempt n (from 1; below 1 counts as 1):
// Base, 2 × Base, 4 × Base … up to Max, then spread by the jitter. r is a
// random number in [0, 1) (rand.Float64); 0.5 gives the wait itself.
func (p Policy) Delay(n int, r float64) time.Duration {
	n = max(n, 1)
	d := p.Max
	// A shift past the width of a Duration wraps to 0 or below: that is
	// past Max too.
	if n < 63 {
		if s := p.Base << (n - 1); s > 0 && s < p.Max {
			d = s
		}
	}
	if p.Jitter == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - p.Jitter + 2*p.Jitter*r))
}
