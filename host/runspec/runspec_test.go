package runspec

import (
	"regexp"
	"testing"
)

// A run id is "run_" and 16 hex digits, fresh each time: the id users see
// in `agent-worker runs` and pass to `runs show`.
func TestNewRunID(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^run_[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID()
		if !format.MatchString(id) {
			t.Fatalf("NewRunID() = %q, want run_ and 16 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewRunID() gave %s twice", id)
		}
		seen[id] = true
	}
}
