package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/store"
)

// The outbox shows by state, read at the scrape, and attempts count by
// event and outcome.
func TestNotifications(t *testing.T) {
	t.Parallel()
	m := New(func(context.Context) (map[store.AgentKey]int, error) { return nil, nil }, hclog.NewNullLogger())
	n := m.Notifications(func(context.Context) (map[string]int, error) {
		return map[string]int{"pending": 2, "delivered": 5, "failed": 1}, nil
	})
	n.NotifyAttempt("run_failed", "retry")
	n.NotifyAttempt("run_failed", "delivered")
	_, body := get(t, m)
	for _, want := range []string{`agent_worker_notify_deliveries{state="pending"} 2`, `agent_worker_notify_deliveries{state="failed"} 1`,
		`agent_worker_notify_attempts_total{event="run_failed",outcome="retry"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s in:\n%s", want, body)
		}
	}
}
