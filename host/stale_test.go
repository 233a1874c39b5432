package host

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// A plugin process that stops (SIGSTOP of its process group) has its run
// killed after the heartbeat limit, recorded failed with "no heartbeat for
// 1 s" and retried; a run that is alive but quiet (a backend blocked
// without events) is not touched by the heartbeat check and ends at the
// idle timeout instead. Status shows each running run's heartbeat.
func TestStaleRunIsKilledAndRetried(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{HeartbeatTimeout: time.Second, IdleTimeout: 4 * time.Second}, noPoll)
	ev := watchEvents(t, th)
	c, ctx := th.client(), context.Background()
	mockAgent(t, th, "frozen", map[string]any{"hang": true, "when": map[string]any{"attempt": 1}}, map[string]any{"result": "thawed"})
	mockAgent(t, th, "quiet", map[string]any{"hang": true, "when": map[string]any{"attempt": 1}}, map[string]any{"result": "awake"})

	if _, err := c.Send(ctx, api.SendRequest{Target: "frozen", Message: "go"}); err != nil {
		t.Fatal(err)
	}
	started := ev.next("frozen's first run", runOf(team.EventRunStarted, "frozen"))
	h, err := c.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var w *api.Worker
	for i := range h.Workers {
		if h.Workers[i].Run == started.Run.ID {
			w = &h.Workers[i]
		}
	}
	if w == nil || w.Agent != "frozen" || w.Backend != "mock" || w.PID <= 0 || w.HeartbeatAt.IsZero() {
		t.Fatalf("status while frozen runs: running = %+v, want its run %s with pid and heartbeat", h.Workers, started.Run.ID)
	}
	if err := syscall.Kill(-w.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-w.PID, syscall.SIGCONT) })
	if _, err := c.Send(ctx, api.SendRequest{Target: "quiet", Message: "go"}); err != nil {
		t.Fatal(err)
	}

	failed := ev.next("frozen's stopped run to fail", runOf(team.EventRunFailed, "frozen"))
	if !strings.Contains(failed.Run.Error, "no heartbeat for 1 s") {
		t.Errorf("stopped run failed with %q, want \"no heartbeat for 1 s\"", failed.Run.Error)
	}
	testkit.WaitGone(t, w.PID)
	ev.settled(th, "frozen")
	runs := runsOf(t, th, "frozen")
	if len(runs) != 2 || runs[1].State != "failed" || !strings.Contains(runs[1].Error, "no heartbeat for 1 s") ||
		runs[0].State != "succeeded" || runs[0].Attempt != 2 {
		t.Errorf("frozen runs = %+v, want the stale one failed and a retry that succeeded", runs)
	}

	ev.settled(th, "quiet")
	runs = runsOf(t, th, "quiet")
	if len(runs) != 2 || !strings.Contains(runs[1].Error, "idle timeout") || strings.Contains(runs[1].Error, "heartbeat") {
		t.Errorf("quiet runs = %+v, want the first ended by the idle timeout, not the heartbeat", runs)
	}
	if h, err := c.Health(ctx); err != nil || len(h.Workers) != 0 {
		t.Errorf("running after both settled = %+v, %v", h.Workers, err)
	}
}
