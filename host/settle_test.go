package host

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// A run's result posted by the settle is a message like any other: its
// mentions wake their agents and a long result becomes a resource with a
// stub in the channel.
func TestRunResultIsPostedLikeAMessage(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	if _, err := th.client().CreateAgent(ctx, api.AgentSpec{Name: "bob", Backend: "external"}); err != nil {
		t.Fatal(err)
	}
	long := "@bob " + strings.Repeat("the whole report. ", 300) // over the 4000 characters of a message
	mockAgent(t, th, "alice", map[string]any{"result": long})
	if _, err := th.client().Send(ctx, api.SendRequest{Target: "alice", Message: "write the report"}); err != nil {
		t.Fatal(err)
	}
	ev.next("bob woken by alice's reply", runOf(team.EventWake, "bob"))
	ev.settled(th, "alice")

	said := saidBy(t, th, "alice")
	if len(said) != 1 || !strings.HasPrefix(said[0], "@bob [long message") || !strings.Contains(said[0], "res_") {
		t.Fatalf("alice said %q; want one stub that mentions bob and names a resource", said)
	}
	id := said[0][strings.Index(said[0], "res_"):][:len("res_")+16]
	res, err := th.DB().GetResource(ctx, store.Scope{Workflow: "global", Tag: "main"}, id)
	if err != nil || res.Content != long || res.CreatedBy != "alice" {
		t.Errorf("resource %s = %+v, %v; want alice's whole result", id, res, err)
	}
	if d := depth(t, th, "bob"); d != 1 {
		t.Errorf("bob's inbox = %d, want the reply", d)
	}
	if r := runsOf(t, th, "alice"); len(r) != 1 || r[0].State != api.RunSucceeded {
		t.Errorf("alice's runs = %+v", r)
	}
}

// A settle that fails leaves the run unsettled: nothing posted, the inbox
// unread, the run failed. The retry settles it, and the reply is posted
// once.
func TestFailedSettleIsRedoneAndRepliesOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll, func(c *Config) {
		c.Scheduler.BeforeSettle = func(ctx context.Context, runID string) error {
			if calls.Add(1) == 1 {
				return errors.New("the daemon went away before the settle")
			}
			return nil
		}
	})
	ev := watchEvents(t, th)
	mockAgent(t, th, "alice", map[string]any{"result": "handled"})
	if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "alice", Message: "do it once"}); err != nil {
		t.Fatal(err)
	}
	failed := ev.next("the first run to fail", runOf(team.EventRunFailed, "alice"))
	if !strings.Contains(failed.Run.Error, "went away") {
		t.Errorf("first run failed with %q", failed.Run.Error)
	}
	ev.settled(th, "alice")
	if said := saidBy(t, th, "alice"); len(said) != 1 || said[0] != "handled" {
		t.Errorf("alice said %q, want one reply", said)
	}
	runs := runsOf(t, th, "alice")
	if len(runs) != 2 || runs[1].State != api.RunFailed || runs[0].State != api.RunSucceeded {
		t.Errorf("runs = %+v; want the unsettled run failed, the retry succeeded", runs)
	}
	if ws := runWorkers(t, th); len(ws) != 0 {
		t.Errorf("workers after both runs ended = %+v", ws)
	}
}

// A result the channel refuses (over the message limit) is not acked
// away: the run fails with the reason and the message stays unread. An
// agent that already answered through its tools settles anyway.
func TestUnpostableResult(t *testing.T) {
	t.Parallel()
	tooLong := strings.Repeat("x", team.DefaultMaxMessageChars+1)
	tests := map[string]struct {
		script    []map[string]any
		wantState string
		wantDepth int
	}{
		"silent agent": {[]map[string]any{{"result": tooLong}}, "failed", 1},
		"agent spoke":  {[]map[string]any{{"reply": "see the report in the docs"}, {"result": tooLong}}, "idle", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
			ev := watchEvents(t, th)
			mockAgent(t, th, "alice", tc.script...)
			if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "alice", Message: "report"}); err != nil {
				t.Fatal(err)
			}
			st := ev.next("alice to end up "+tc.wantState, func(e team.Event) bool {
				return e.Kind == team.EventAgentState && e.Agent.Name == "alice" && (e.State == "failed" || e.State == "idle" && depth(t, th, "alice") == 0)
			})
			if st.State != tc.wantState || depth(t, th, "alice") != tc.wantDepth {
				t.Fatalf("alice is %s (%s) with %d unread; want %s with %d", st.State, st.Error, depth(t, th, "alice"), tc.wantState, tc.wantDepth)
			}
			if tc.wantState == "failed" && (!strings.Contains(st.Error, "post the run's result") || !strings.Contains(st.Error, "the limit is")) {
				t.Errorf("alice failed with %q; want the reason the result was refused", st.Error)
			}
			for _, said := range saidBy(t, th, "alice") {
				if len(said) > team.DefaultMaxMessageChars {
					t.Errorf("the refused result was posted")
				}
			}
		})
	}
}
