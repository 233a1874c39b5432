package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// A workflow's budget stops its team at the cap: the next run does not
// start, every agent is over_budget, the channel says which budget and how
// to go on, the message waits unread; raising the budget and resuming runs
// it.
func TestBudgetStopsTheTeamAtItsCap(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	file := filepath.Join(t.TempDir(), "capped.yaml")
	saveFile(t, file, `name: capped
budget: {runs: 2}
agents:
  alice: {backend: mock, config: {script: [{usage: {input: 100, output: 10, cost: 0.01}}, {result: "done {{inbox_summary}}"}]}}
  bob: {backend: mock}
`)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	alice := store.AgentKey{Name: "alice", Workflow: "capped", Tag: "main"}
	for _, m := range []string{"one", "two"} {
		if _, err := c.Send(ctx, api.SendRequest{Target: "@capped", Message: "@alice " + m}); err != nil {
			t.Fatal(err)
		}
		ev.next("alice's run on "+m, func(e team.Event) bool { return e.Kind == team.EventRunFinished && e.Agent == alice })
	}
	third, err := c.Send(ctx, api.SendRequest{Target: "@capped", Message: "@alice three"})
	if err != nil {
		t.Fatal(err)
	}
	notice := ev.next("the over-budget notice", func(e team.Event) bool {
		return e.Kind == team.EventMessage && e.Message.Sender == "system" && strings.Contains(e.Message.Content, "over its budget")
	})
	if got := notice.Message.Content; !strings.Contains(got, "@capped is over its budget: runs: 2 of 2; spent 2 run(s), 220 tokens, $0.0200") ||
		!strings.Contains(got, "agent-worker budget @capped set") || !strings.Contains(got, "agent-worker resume @capped") {
		t.Errorf("notice = %q", got)
	}
	for _, name := range []string{"alice", "bob"} {
		a, err := c.GetAgent(ctx, api.Target{Agent: name, Workflow: "capped", Tag: "main"})
		if err != nil || a.State != api.AgentOverBudget || !strings.Contains(a.Error, "runs: 2 of 2") {
			t.Errorf("%s after the cap = %s %q, %v", name, a.State, a.Error, err)
		}
	}
	if d, err := th.DB().InboxDepth(ctx, alice); err != nil || d != 1 {
		t.Errorf("alice has %d unread, %v; want the third message waiting", d, err)
	}
	runs, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: alice, Limit: 10})
	if err != nil || len(runs) != 2 {
		t.Errorf("alice ran %d times, %v; want 2 (the cap)", len(runs), err)
	}

	runsCap := int64(5)
	if err := c.SetBudget(ctx, api.Target{Workflow: "capped", Tag: "main"}, api.BudgetRequest{Runs: &runsCap}); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(ctx, api.Target{Workflow: "capped", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's run on the third message", func(e team.Event) bool { return e.Kind == team.EventRunFinished && e.Agent == alice })
	runs, err = th.DB().ListRuns(ctx, store.RunFilter{Agent: alice, Limit: 10})
	if err != nil {
		t.Fatalf("alice's runs after raising the budget: %v", err)
	}
	if len(runs) != 3 || runs[0].InboxUntilSeq < third.Seq {
		t.Errorf("after raising the budget: %d runs, the newest shown up to #%d (want #%d)", len(runs), runs[0].InboxUntilSeq, third.Seq)
	}
}

// Bad budgets are refused and change nothing.
func TestBudgetRequestErrors(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		says               string
	}{
		"negative":      {"PUT", "/budgets/%40global", `{"usd":-1}`, 400, "cannot be negative"},
		"not a number":  {"PUT", "/budgets/%40global", `{"runs":"many"}`, 400, `field "runs" must be a whole number`},
		"no limit":      {"PUT", "/budgets/%40global", `{"hard":true}`, 400, "needs a limit"},
		"unknown agent": {"PUT", "/budgets/nobody", `{"runs":1}`, 404, "not found"},
		"unknown scope": {"DELETE", "/budgets/%40nope", ``, 404, "not found"},
	} {
		status, e, b := th.call(t, tc.method, tc.path, tc.body)
		if status != tc.status || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %d %s; want %d saying %q", name, status, b, tc.status, tc.says)
		}
	}
}

// A hard budget cancels the run that crosses it: the plugin is stopped
// mid-run, the run is recorded cancelled, the agent goes over_budget and
// its message stays unread.
func TestHardBudgetCancelsTheRunThatCrossesIt(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	file := filepath.Join(t.TempDir(), "hard.yaml")
	saveFile(t, file, `name: hard
agents:
  spender:
    backend: mock
    budget: {tokens: 100, hard: true}
    config: {script: [{usage: {input: 500, output: 20}}, {hang: true}]}
`)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, api.SendRequest{Target: "@hard", Message: "@spender go"}); err != nil {
		t.Fatal(err)
	}
	spender := store.AgentKey{Name: "spender", Workflow: "hard", Tag: "main"}
	notice := ev.next("the over-budget notice", func(e team.Event) bool {
		return e.Kind == team.EventMessage && e.Message.Sender == "system" && strings.Contains(e.Message.Content, "over its budget")
	})
	if !strings.Contains(notice.Message.Content, "spender@hard is over its budget: tokens: 520 of 100") {
		t.Errorf("notice = %q", notice.Message.Content)
	}
	runs, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: spender, Limit: 10})
	if err != nil || len(runs) != 1 || runs[0].State != api.RunCancelled || !strings.Contains(runs[0].Error, "hard budget") {
		t.Errorf("runs = %+v, %v; want one cancelled by the hard budget", runs, err)
	}
	a, err := c.GetAgent(ctx, api.Target{Agent: "spender", Workflow: "hard", Tag: "main"})
	if err != nil || a.State != api.AgentOverBudget || a.InboxDepth != 1 {
		t.Errorf("spender = %s, %d unread (%v); want over_budget with its message unread", a.State, a.InboxDepth, err)
	}
	if ws := runWorkers(t, th); len(ws) != 0 {
		t.Errorf("a run's plugin process is still recorded: %+v", ws)
	}
}
