package runner

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

func TestExitReason(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		script string
		want   string
	}{
		"exit code": {"exit 3", "exit code 3"},
		"SIGKILL":   {"kill -KILL $$", "killed by signal SIGKILL"},
		"SIGTERM":   {"kill -TERM $$", "killed by signal SIGTERM"},
		"SIGSEGV":   {"kill -SEGV $$", "killed by signal SIGSEGV"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			_ = cmd.Run()
			if got := exitReason(cmd); got != tc.want {
				t.Errorf("exitReason = %q, want %q", got, tc.want)
			}
		})
	}
}

// The plugin boundary: a backend's sdk error class comes out as the
// daemon's code, and its permanent mark survives, so a bad config is
// still not retried.
func TestBackendErrorsBecomeCodes(t *testing.T) {
	t.Parallel()
	err := runError(backend.Permanent(sdk.Errorf(sdk.ErrInvalid, "config: bad model")))
	if !backend.IsPermanent(err) || !errors.Is(err, api.ErrInvalid) || err.Error() != "config: bad model" {
		t.Errorf("permanent backend error: %v (permanent %v, code %s)", err, backend.IsPermanent(err), api.ErrorCode(err))
	}
	if err := runError(sdk.Errorf(sdk.ErrUnavailable, "model overloaded")); backend.IsPermanent(err) || !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("retryable backend error: %v", err)
	}
}
