package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

func get(t *testing.T, m *Metrics) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// A store that cannot be read leaves the inbox gauge out of one scrape;
// everything else is still served.
func TestUnreadableStoreLeavesTheRestServed(t *testing.T) {
	t.Parallel()
	m := New(func(context.Context) (map[store.AgentKey]int, error) { return nil, errors.New("database is locked") }, hclog.NewNullLogger())
	m.RunEnded("mock", "review", api.RunFailed, time.Second, backend.Usage{})
	code, body := get(t, m)
	if code != http.StatusOK || !strings.Contains(body, `agent_worker_runs_total{backend="mock",state="failed"} 1`) || !strings.Contains(body, "go_goroutines") {
		t.Errorf("status %d, body:\n%s", code, body)
	}
	if strings.Contains(body, "agent_worker_inbox_depth{") {
		t.Errorf("inbox depths served from an unreadable store:\n%s", body)
	}
}

// Two daemons in one process count apart: each has its own registry.
func TestEachDaemonCountsApart(t *testing.T) {
	t.Parallel()
	none := func(context.Context) (map[store.AgentKey]int, error) { return nil, nil }
	a, b := New(none, hclog.NewNullLogger()), New(none, hclog.NewNullLogger())
	a.ToolCalled("my_inbox", time.Millisecond, nil)
	if _, body := get(t, b); strings.Contains(body, "agent_worker_mcp_tool_calls_total{") {
		t.Errorf("a tool call of one daemon shows in another's metrics:\n%s", body)
	}
	if _, body := get(t, a); !strings.Contains(body, `agent_worker_mcp_tool_calls_total{outcome="ok",tool="my_inbox"} 1`) {
		t.Errorf("the tool call is missing:\n%s", body)
	}
}
