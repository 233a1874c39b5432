package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// What a member recorded as running but no longer holds (a run's end or
// its agent's move back to idle lost to an outage) is freed: the run
// fails with its token dead and its worker handed over, the agent goes
// back to idle. What the member holds, what another member recorded, and
// what was recorded after the recovery began are left alone.
func TestRecoverStrandedFreesOnlyWhatTheMemberNoLongerHolds(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := testPath(t)
	ctx := t.Context()
	me := openAt(t, path, Options{Now: clk.Now, Daemon: "me"})
	other := openAt(t, path, Options{Now: clk.Now, Daemon: "other"})
	team := Scope{"team", "t"}
	createTeam(t, me, team, "alice", "bob", "carol", "dave", "erin")
	key := func(name string) AgentKey { return AgentKey{Name: name, Workflow: team.Workflow, Tag: team.Tag} }
	startRunning := func(db *DB, agent, runID string) string {
		t.Helper()
		if moved, err := db.MoveAgentState(ctx, key(agent), []contract.AgentState{contract.AgentIdle}, contract.AgentRunning, ""); err != nil || !moved {
			t.Fatalf("move %s to running = %v, %v", agent, moved, err)
		}
		if _, err := db.StartRun(ctx, Run{ID: runID, Agent: key(agent), Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddWorker(ctx, Worker{RunID: runID, PID: 42, PGID: 42, PluginPath: "/p"}); err != nil {
			t.Fatal(err)
		}
		tok, err := db.CreateToken(ctx, key(agent), runID)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	aliceToken := startRunning(me, "alice", "run-a") // stranded: its end was lost
	startRunning(me, "bob", "run-b")                 // held: in flight here
	startRunning(other, "carol", "run-c")            // another member's
	// Dave's run ended but his move back to idle was lost.
	if moved, err := me.MoveAgentState(ctx, key("dave"), []contract.AgentState{contract.AgentIdle}, contract.AgentRunning, ""); err != nil || !moved {
		t.Fatalf("move dave to running = %v, %v", moved, err)
	}
	clk.Set(clk.Now().Add(time.Second))
	holds := func(k AgentKey) bool {
		if k.Name == "erin" {
			t.Error("recovery asked about erin, whose run started after it began")
		}
		return k.Name == "bob"
	}
	// Erin's run starts at the instant the recovery begins: not before it.
	startRunning(me, "erin", "run-e")
	r, err := me.RecoverStranded(ctx, "me", holds)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 1 || r.Runs[0].ID != "run-a" {
		t.Errorf("runs freed = %+v, want run-a", r.Runs)
	}
	if diff := cmp.Diff([]AgentKey{key("alice"), key("dave")}, r.Agents); diff != "" {
		t.Errorf("agents freed (-want +got):\n%s", diff)
	}
	if len(r.Workers) != 1 || r.Workers[0].RunID != "run-a" {
		t.Errorf("workers handed over = %+v, want run-a's", r.Workers)
	}
	for id, want := range map[string]contract.RunState{"run-a": contract.RunFailed, "run-b": contract.RunRunning, "run-c": contract.RunRunning, "run-e": contract.RunRunning} {
		run, _, err := me.GetRun(ctx, id)
		if err != nil || run.State != want {
			t.Errorf("%s = %v (err %v), want %v", id, run.State, err, want)
		}
	}
	for name, want := range map[string]contract.AgentState{"alice": contract.AgentIdle, "bob": contract.AgentRunning, "carol": contract.AgentRunning, "dave": contract.AgentIdle, "erin": contract.AgentRunning} {
		a, err := me.GetAgent(ctx, key(name))
		if err != nil || a.State != want {
			t.Errorf("%s = %v (err %v), want %v", name, a.State, err, want)
		}
	}
	if _, err := me.LookupToken(ctx, aliceToken); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("token of the freed run: %v, want refused as not found", err)
	}
	if again, err := me.RecoverStranded(ctx, "me", holds); err != nil || len(again.Runs)+len(again.Agents) != 0 {
		t.Errorf("second recovery = %+v, %v; want nothing", again, err)
	}
}
