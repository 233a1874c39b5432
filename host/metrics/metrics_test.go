package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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

// The series of an agent that was removed, and of a workflow none of
// whose agents lives, are gone from the next scrape; those of live ones
// stay, and a failed read of who lives deletes nothing (issue 40).
func TestSeriesOfRemovedAgentsAndWorkflowsAreDeleted(t *testing.T) {
	t.Parallel()
	none := func(context.Context) (map[store.AgentKey]int, error) { return nil, nil }
	m := New(none, hclog.NewNullLogger())
	q := m.MergeQueue(func(context.Context) (map[store.Scope]int, error) { return nil, nil })
	live := []store.AgentKey{{Workflow: "review", Tag: "main", Name: "alice"}, {Workflow: "review", Tag: "main", Name: "bob"}, {Workflow: "build", Tag: "main", Name: "carol"}}
	var failRead bool
	m.ForgetGone(func(context.Context) ([]store.AgentKey, error) {
		if failRead {
			return nil, errors.New("database is locked")
		}
		return live, nil
	})
	used := backend.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01}
	for _, wf := range []string{"review", "build"} {
		m.RunEnded("mock", wf, api.RunSucceeded, time.Second, used)
		q.QueueEnded(wf, api.QueueLanded, time.Second)
		q.CheckRan(wf, time.Second, true)
	}
	m.SandboxRefused("review", "alice")
	m.SandboxRefused("review", "bob")
	m.SandboxRefused("build", "carol")

	series := map[string]string{
		"alice's refusals":      `agent_worker_sandbox_refusals_total{agent="alice",workflow="review"}`,
		"bob's refusals":        `agent_worker_sandbox_refusals_total{agent="bob",workflow="review"}`,
		"carol's refusals":      `agent_worker_sandbox_refusals_total{agent="carol",workflow="build"}`,
		"review's cost":         `agent_worker_cost_usd_total{workflow="review"}`,
		"build's cost":          `agent_worker_cost_usd_total{workflow="build"}`,
		"build's tokens":        `agent_worker_tokens_total{direction="input",workflow="build"}`,
		"build's merge entries": `agent_worker_merge_queue_entries_total{state="landed",workflow="build"}`,
		"build's checks":        `agent_worker_merge_queue_check_duration_seconds_count{outcome="ok",workflow="build"}`,
	}
	check := func(when string, gone ...string) {
		t.Helper()
		_, body := get(t, m)
		for name, s := range series {
			if want := !slices.Contains(gone, name); strings.Contains(body, s+" ") != want {
				t.Errorf("%s: %s served = %v, want %v", when, name, !want, want)
			}
		}
	}
	check("all live")
	live = live[:1] // bob removed, build's only agent stopped
	failRead = true
	check("who lives unreadable")
	failRead = false
	check("bob and build gone", "bob's refusals", "carol's refusals", "build's cost", "build's tokens", "build's merge entries", "build's checks")

	// Back again: counted from zero.
	live = append(live, store.AgentKey{Workflow: "build", Tag: "main", Name: "carol"})
	m.RunEnded("mock", "build", api.RunSucceeded, time.Second, used)
	if _, body := get(t, m); !strings.Contains(body, `agent_worker_cost_usd_total{workflow="build"} 0.01`+"\n") {
		t.Errorf("build's cost after it came back:\n%s", body)
	}
}

// The trace counters read the exporter's counts at each scrape.
func TestTraceSpansCounted(t *testing.T) {
	t.Parallel()
	m := New(func(context.Context) (map[store.AgentKey]int, error) { return nil, nil }, hclog.NewNullLogger())
	m.Traces(func() (uint64, uint64) { return 7, 3 })
	_, body := get(t, m)
	for _, want := range []string{"agent_worker_trace_spans_exported_total 7", "agent_worker_trace_spans_dropped_total 3"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}
