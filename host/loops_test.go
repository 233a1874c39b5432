package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// When the scheduler's loop ends with an error the daemon stops, with
// the loop named in its log and in Run's error (which the daemon command
// turns into a non-zero exit), instead of answering with nothing
// scheduled.
func TestSchedulerLoopStoppingStopsTheDaemon(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var logs testkit.Buffer
	h, err := New(Config{Home: home, Listen: "127.0.0.1:0", FailLoop: "scheduler",
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	done := make(chan error, 1)
	go func() { done <- h.Run(context.Background()) }()
	select {
	case err = <-done:
	case <-time.After(testkit.Deadline):
		h.requestStop()
		<-done
		t.Fatalf("the daemon kept running after its scheduler stopped; log:\n%s", logs.String())
	}
	if err == nil || !strings.HasPrefix(err.Error(), "the scheduler stopped: ") {
		t.Errorf("Run = %v, want an error that starts with \"the scheduler stopped: \"", err)
	}
	if !strings.Contains(logs.String(), "the scheduler stopped: test hook: made to fail (Config.FailLoop); stopping the daemon") {
		t.Errorf("the log does not say which loop stopped the daemon:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json after the daemon stopped: %v, want it removed", err)
	}
}

// A file watcher that stops is started again, and status lists it as a
// problem meanwhile; the daemon keeps working.
func TestWatcherLoopIsRestartedAndShownInStatus(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "127.0.0.1:0", FailLoop: "plugin watcher",
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	testkit.Eventually(t, "status to list the stopped plugin watcher", func() error {
		h, err := th.client().Health(t.Context())
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(h.Problems, func(p string) bool { return strings.HasPrefix(p, "the plugin watcher stopped (test hook") }) {
			return fmt.Errorf("problems: %q", h.Problems)
		}
		return nil
	})
	testkit.WaitFor(t, "the plugin watcher's second failure (it was restarted)", func() bool {
		return strings.Contains(logs.String(), "failures=2")
	})
	select {
	case err := <-th.done:
		t.Fatalf("the daemon stopped for a watcher that can restart: %v", err)
	default:
	}
}
