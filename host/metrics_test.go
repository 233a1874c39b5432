package host

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
)

// scrape reads GET /metrics with the daemon's token and returns every
// sample by its series as the text format writes it, e.g.
// `agent_worker_runs_total{backend="mock",state="succeeded"}`.
func scrape(t testing.TB, th *testHost) map[string]float64 {
	t.Helper()
	status, _, body := th.call(t, "GET", "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", status, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("GET /metrics: unreadable sample %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// A Prometheus server scraping a daemon that has run an agent sees the run
// by backend and state, its duration and wait, the MCP tools its plugin
// called, what it spent, the inboxes still waiting, and the Go runtime.
func TestMetricsAfterARealRun(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx, c := context.Background(), th.client()
	// The run's context comes with its request; the tool call is the
	// script's own.
	mockAgent(t, th, "alice", map[string]any{"usage": map[string]any{"input": 120, "output": 30, "cost": 0.25}},
		map[string]any{"tool": "my_inbox"}, map[string]any{"result": "alice done."})
	if _, err := c.Run(ctx, api.RunRequest{Agent: "alice", Message: "summarise the plan"}, api.RunHandlers{}); err != nil {
		t.Fatal(err)
	}
	// carol is outside the daemon: the message for her waits unread.
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "carol", Backend: "external"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, api.SendRequest{Target: "@global", Message: "@carol please review"}); err != nil {
		t.Fatal(err)
	}
	runs, err := c.ListRuns(ctx, "alice")
	if err != nil || len(runs) != 1 || runs[0].State != api.RunSucceeded {
		t.Fatalf("alice's runs = %+v, %v; want one that succeeded", runs, err)
	}

	m := scrape(t, th)
	want := map[string]float64{
		`agent_worker_runs_total{backend="mock",state="succeeded"}`:              1,
		`agent_worker_run_duration_seconds_count{backend="mock"}`:                1,
		`agent_worker_run_wait_seconds_count{backend="mock"}`:                    1,
		`agent_worker_tokens_total{direction="input",workflow="global"}`:         120,
		`agent_worker_tokens_total{direction="output",workflow="global"}`:        30,
		`agent_worker_cost_usd_total{workflow="global"}`:                         0.25,
		`agent_worker_inbox_depth{agent="carol",tag="main",workflow="global"}`:   1,
		`agent_worker_inbox_depth{agent="alice",tag="main",workflow="global"}`:   0,
		`agent_worker_plugin_processes{kind="backend"}`:                          0, // the run's process is gone
		`agent_worker_mcp_tool_calls_total{outcome="ok",tool="my_inbox"}`:        1,
		`agent_worker_mcp_tool_duration_seconds_count{tool="my_inbox"}`:          1,
		`agent_worker_runs_total{backend="mock",state="failed"}`:                 -1, // absent: nothing failed
		`agent_worker_mcp_tool_calls_total{outcome="error",tool="my_inbox"}`:     -1,
		`agent_worker_inbox_depth{agent="nobody",tag="main",workflow="global"}`:  -1,
		`agent_worker_tokens_total{direction="input",workflow="somewhere-else"}`: -1,
	}
	for series, v := range want {
		got, ok := m[series]
		switch {
		case v < 0 && ok:
			t.Errorf("%s = %v, want no such series", series, got)
		case v >= 0 && !ok:
			t.Errorf("%s is missing from /metrics", series)
		case v >= 0 && got != v:
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	for _, series := range []string{"go_goroutines", "process_resident_memory_bytes", "agent_worker_store_write_duration_seconds_count"} {
		if m[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, m[series])
		}
	}

	// Without the token, nothing is shown.
	status, e, body := th.call(t, "GET", "/metrics", "", "")
	if status != http.StatusUnauthorized || e.Code != api.CodeUnauthorized || strings.Contains(string(body), "agent_worker_") {
		t.Errorf("GET /metrics without the token: status %d, body %s; want 401", status, body)
	}
}
