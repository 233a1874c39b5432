package host

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// scriptedAgent registers a mock agent with a model, a system prompt and a
// script.
func scriptedAgent(t testing.TB, th *testHost, name, model, system string, script ...map[string]any) {
	t.Helper()
	b, _ := json.Marshal(script)
	spec := api.AgentSpec{Name: name, Backend: "mock", Model: model, System: system,
		Config: backend.AgentConfig{Extra: map[string]json.RawMessage{"script": b}}}
	if _, err := th.client().CreateAgent(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
}

func kinds(events []api.RunEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

func TestRunTranscriptRecordsPromptToolsUsageAndCost(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	long := strings.Repeat("x", 3000)
	scriptedAgent(t, th, "alice", "anthropic/claude-sonnet-4-5-20250929", "You review code.\nBe brief.",
		map[string]any{"text": "looking"},
		map[string]any{"tool": "team_doc_write", "args": map[string]any{"content": long}},
		map[string]any{"tool": "team_doc_read"},
		map[string]any{"usage": map[string]any{"input": 1000, "output": 200}},
		map[string]any{"result": "reviewed"})
	res, err := th.client().Serve(ctx, api.RunRequest{Agent: "alice", Message: "please review"})
	if err != nil {
		t.Fatal(err)
	}
	// sonnet 4.5: $3 in, $15 out per million tokens.
	const want = 1000*3.0/1e6 + 200*15.0/1e6
	if math.Abs(res.Usage.CostUSD-want) > 1e-9 {
		t.Errorf("serve's usage = %+v, want cost %v from the price table", res.Usage, want)
	}
	d, err := th.client().GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if d.CostUSD == nil || math.Abs(*d.CostUSD-want) > 1e-9 || d.CostSource != "prices" || d.InputTokens != 1000 || d.OutputTokens != 200 ||
		d.Model != "anthropic/claude-sonnet-4-5-20250929" || d.Scope != "global:main" {
		t.Errorf("run = %+v (cost %v)", d.Run, d.CostUSD)
	}
	got := slices.DeleteFunc(kinds(d.Events), func(k string) bool { return k == "log" || k == "heartbeat" })
	wantKinds := []string{"prompt", "context", "text", "tool_call", "tool_result", "tool_call", "tool_result", "usage", "result"}
	if !slices.Equal(got, wantKinds) {
		t.Fatalf("transcript kinds = %v, want %v", got, wantKinds)
	}
	var p api.PromptEvent
	if err := json.Unmarshal(d.Events[0].Data, &p); err != nil {
		t.Fatal(err)
	}
	if p.System != "You review code.\nBe brief." || len(p.Inbox) != 1 || p.Inbox[0].From != "user" ||
		p.Inbox[0].Content != "@alice please review" || p.InboxUntilSeq != p.Inbox[0].Seq {
		t.Errorf("prompt event = %+v", p)
	}
	var read backend.ToolCall
	for _, e := range d.Events {
		if e.Kind == "tool_result" {
			_ = json.Unmarshal(e.Data, &read)
		}
	}
	if read.Name != "team_doc_read" || !strings.Contains(read.Result, long) {
		t.Errorf("the last tool result does not hold the document: %.200q", read.Result)
	}

	// The agent's total is its runs' spend.
	a, err := th.client().GetAgent(ctx, api.Target{Agent: "alice", Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Spend == nil || a.Spend.Runs != 1 || a.Spend.InputTokens != 1000 || math.Abs(a.Spend.CostUSD-want) > 1e-9 {
		t.Errorf("alice's spend = %+v", a.Spend)
	}
}

func TestRunCostPluginWinsUnknownModelHasNoCost(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	scriptedAgent(t, th, "priced", "openai/gpt-4o", "", map[string]any{"usage": map[string]any{"input": 10, "output": 10, "cost": 0.5}},
		map[string]any{"result": "ok"})
	scriptedAgent(t, th, "mystery", "acme/mystery-9", "", map[string]any{"usage": map[string]any{"input": 500, "output": 50}},
		map[string]any{"result": "ok"})
	for _, name := range []string{"priced", "mystery"} {
		if _, err := th.client().Serve(ctx, api.RunRequest{Agent: name, Message: "go"}); err != nil {
			t.Fatal(err)
		}
	}
	if r := lastRun(t, th, "priced"); r.CostUSD == nil || *r.CostUSD != 0.5 || r.CostSource != "plugin" {
		t.Errorf("a cost the backend reports wins over the table: %+v (cost %v)", r, r.CostUSD)
	}
	r := lastRun(t, th, "mystery")
	if r.CostUSD != nil || r.InputTokens != 500 || r.OutputTokens != 50 {
		t.Errorf("an unknown model's run = %+v (cost %v), want tokens and no cost", r, r.CostUSD)
	}
	// The raw JSON says null, not 0: a client cannot mistake it for free.
	_, _, body := th.call(t, "GET", "/runs?target=mystery", "")
	if !strings.Contains(string(body), `"cost_usd":null`) {
		t.Errorf("GET /runs body = %s, want cost_usd null", body)
	}
	wfs, err := th.client().ListWorkflows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wfs {
		if w.Target == "@global" && (w.Spend == nil || w.Spend.Runs != 2 || w.Spend.CostUSD != 0.5 || w.Spend.UnpricedRuns != 1 || w.Spend.InputTokens != 510) {
			t.Errorf("@global's spend = %+v", w.Spend)
		}
	}
}

func TestListRunsFilters(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	scriptedAgent(t, th, "good", "", "", map[string]any{"result": "ok"})
	scriptedAgent(t, th, "bad", "", "", map[string]any{"fail": "broken on purpose", "permanent": true})
	var ids []string
	for _, name := range []string{"good", "bad", "good"} {
		res, err := th.client().Serve(ctx, api.RunRequest{Agent: name, Message: "go"})
		if name == "bad" {
			if err == nil {
				t.Fatal("the failing agent's run succeeded")
			}
			ids = append(ids, lastRun(t, th, "bad").ID)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.RunID)
	}
	idsOf := func(runs []api.Run) []string {
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	all, err := th.client().Runs(ctx, api.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{ids[2], ids[1], ids[0]}; !slices.Equal(idsOf(all), want) {
		t.Errorf("runs = %v, want newest first %v", idsOf(all), want)
	}
	failed, err := th.client().Runs(ctx, api.RunQuery{Failed: true})
	if err != nil || !slices.Equal(idsOf(failed), []string{ids[1]}) || failed[0].Error == "" {
		t.Errorf("--failed = %+v, %v; want only %s", failed, err, ids[1])
	}
	one, err := th.client().Runs(ctx, api.RunQuery{Target: "good", Limit: 1})
	if err != nil || !slices.Equal(idsOf(one), []string{ids[2]}) {
		t.Errorf("good -n 1 = %v, %v; want %s", idsOf(one), err, ids[2])
	}
	scope, err := th.client().Runs(ctx, api.RunQuery{Target: "@global:main"})
	if err != nil {
		t.Fatalf("runs of @global:main: %v", err)
	}
	other, err := th.client().Runs(ctx, api.RunQuery{Target: "@review"})
	if err != nil {
		t.Fatalf("runs of @review: %v", err)
	}
	if len(scope) != 3 || len(other) != 0 {
		t.Errorf("@global:main has %d runs (want 3), @review %d (want 0)", len(scope), len(other))
	}
	if status, e, _ := th.call(t, "GET", "/runs?failed=yes", ""); status != http.StatusBadRequest || !strings.Contains(e.Message, "failed=true") {
		t.Errorf("failed=yes: %d %+v", status, e)
	}
	if status, e, _ := th.call(t, "GET", "/runs/run_nope/events", ""); status != http.StatusNotFound || !strings.Contains(e.Message, "agent-worker runs") {
		t.Errorf("events of an unknown run: %d %+v", status, e)
	}
}

// TestFollowRunStreamsLiveEventsAndEnds follows a run that waits for the
// test: the events before the wait arrive while it runs, and the stream
// ends with the run's end once the test lets it finish.
func TestFollowRunStreamsLiveEventsAndEnds(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gate := filepath.Join(t.TempDir(), "go")
	scriptedAgent(t, th, "alice", "", "",
		map[string]any{"tool": "team_members"},
		map[string]any{"shell": "while [ ! -e " + gate + " ]; do sleep 0.05; done; echo released"},
		map[string]any{"result": "finished"})
	started := make(chan string, 1)
	go func() {
		_, _ = th.client().Run(ctx, api.RunRequest{Agent: "alice", Message: "go"}, api.RunHandlers{Tool: func(api.RunTool) {
			select {
			case started <- "":
			default:
			}
		}})
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the run never called its tool")
	}
	runs, err := th.client().Runs(ctx, api.RunQuery{Target: "alice"})
	if err != nil || len(runs) != 1 || runs[0].State != api.RunRunning {
		t.Fatalf("runs = %+v, %v; want one running", runs, err)
	}
	var seen []string
	var first api.Run
	end, err := th.client().FollowRun(ctx, runs[0].ID, func(r api.Run) { first = r }, func(e api.RunEvent) error {
		seen = append(seen, e.Kind)
		if e.Kind == "tool_result" {
			// Seen live, while the run waits: let it finish.
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.State != api.RunRunning {
		t.Errorf("the stream began with the run %s, want running", first.State)
	}
	if end.State != api.RunSucceeded || end.EndedAt == nil {
		t.Errorf("the stream ended with %+v, want the succeeded run", end)
	}
	if !slices.Contains(seen, "result") || seen[0] != "prompt" {
		t.Errorf("followed events = %v, want the prompt first and the result", seen)
	}
	// A finished run: the stored transcript, then the end, at once.
	again, err := th.client().FollowRun(ctx, runs[0].ID, func(api.Run) {}, func(api.RunEvent) error { return nil })
	if err != nil || again.State != api.RunSucceeded {
		t.Errorf("following a finished run = %+v, %v", again, err)
	}
}
