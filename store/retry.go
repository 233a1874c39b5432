package store

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Bounds of UntilReachable's wait between attempts.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// UntilReachable runs op until it succeeds or fails for a reason other
// than the store being unavailable (a database server that is down, a disk
// that is full), waiting between attempts from 50 ms up to 2 s. It is for
// the writes that must not be lost to an outage, such as the end of a run:
// dropping one would leave an agent running for good. waiting, when set,
// hears the first unavailable error once. It gives up when life ends (the
// daemon stops; its next start recovers what is left), returning the last
// error. op's context is never cancelled by life: an attempt under way
// finishes.
func UntilReachable(life context.Context, op func(context.Context) error, waiting func(error)) error {
	ctx := context.WithoutCancel(life)
	wait := retryFirst
	for first := true; ; first = false {
		err := op(ctx)
		if err == nil || contract.ErrorCode(err) != contract.CodeUnavailable {
			return err
		}
		if first && waiting != nil {
			waiting(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-life.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}
