package testkit

import (
	"testing"
	"time"
)

// Deadline bounds every wait. It is not a timing goal: it only stops a
// broken build, and a loaded CI machine (real CLIs, the race detector,
// two cores) can take many seconds for what takes milliseconds here.
const Deadline = time.Minute

// pollEvery is how often a condition on another process's or goroutine's
// state is looked at again.
const pollEvery = 20 * time.Millisecond

// WaitFor polls cond until it holds. Use it for what has no event a test
// can wait on (another process's files, a background write); after
// Deadline it fails t with "timed out waiting for <what>".
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Eventually(t, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Eventually polls check until it returns nil. After Deadline it fails t
// with what it waited for and the last error check returned, which
// should say what it saw instead.
func Eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err == errNotYet {
				t.Fatalf("timed out after %v waiting for %s", Deadline, what)
			}
			t.Fatalf("timed out after %v waiting for %s: %v", Deadline, what, err)
		}
		time.Sleep(pollEvery) // polling state that sends no event
	}
}

// errNotYet is WaitFor's condition not holding: nothing more to say.
var errNotYet = notYet{}

type notYet struct{}

func (notYet) Error() string { return "not yet" }
