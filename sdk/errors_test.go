package sdk_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/agent-worker/agent-worker/sdk"
)

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err       error
		wantClass error
		wantText  string // "" skips the check
	}{
		"not found":          {sdk.Errorf(sdk.ErrNotFound, "document %s does not exist", "a.md"), sdk.ErrNotFound, "document a.md does not exist"},
		"conflict":           {sdk.Errorf(sdk.ErrConflict, "document notes.md already exists"), sdk.ErrConflict, "document notes.md already exists"},
		"invalid":            {sdk.Errorf(sdk.ErrInvalid, "bad %d", 1), sdk.ErrInvalid, "bad 1"},
		"permission":         {sdk.Errorf(sdk.ErrPermission, "no"), sdk.ErrPermission, "no"},
		"unavailable":        {sdk.Errorf(sdk.ErrUnavailable, "later"), sdk.ErrUnavailable, "later"},
		"sentinel":           {sdk.ErrConflict, sdk.ErrConflict, "conflict"},
		"wrapped by fmt":     {fmt.Errorf("read: %w", sdk.Errorf(sdk.ErrNotFound, "gone")), sdk.ErrNotFound, "read: gone"},
		"fmt wraps sentinel": {fmt.Errorf("x: %w", sdk.ErrUnavailable), sdk.ErrUnavailable, "x: unavailable"},
		"outermost wins":     {sdk.Errorf(sdk.ErrInvalid, "bad: %w", sdk.Errorf(sdk.ErrNotFound, "gone")), sdk.ErrInvalid, "bad: gone"},
		"unclassified":       {errors.New("boom"), nil, "boom"},
		"nil":                {nil, nil, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sdk.Class(tc.err); got != tc.wantClass {
				t.Errorf("Class = %v, want %v", got, tc.wantClass)
			}
			if tc.wantClass != nil && !errors.Is(tc.err, tc.wantClass) {
				t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.wantClass)
			}
			if tc.wantText != "" && tc.err.Error() != tc.wantText {
				t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.wantText)
			}
		})
	}
}

// A %w inside Errorf keeps the cause reachable, so callers can still tell
// fs.ErrNotExist or context.Canceled apart.
func TestErrorfKeepsWrappedCause(t *testing.T) {
	t.Parallel()
	err := sdk.Errorf(sdk.ErrNotFound, "open: %w", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, sdk.ErrNotFound) {
		t.Errorf("err %v lost its cause or class", err)
	}
	if errors.Is(err, sdk.ErrConflict) {
		t.Errorf("err %v claims a class it does not have", err)
	}
}
