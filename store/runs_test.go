package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

func TestRunsAndTranscripts(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	alice := AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"run_a", "run_b"} {
		if _, err := db.StartRun(ctx, Run{ID: id, Agent: alice, Backend: "mock", PluginSHA256: "ab", Attempt: i + 1, InboxUntilSeq: 7}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.UnixMilli(1_700_000_000_000).UTC()
	events := []RunEvent{{N: 1, Kind: "text", Data: `"hi"`, At: at}, {N: 2, Kind: "result", Data: `"done"`, At: at}}
	if err := db.AppendRunEvents(ctx, "run_a", events); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendRunEvents(ctx, "run_a", events[:1]); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("duplicate event n: %v, want conflict", err)
	}
	if err := db.FinishRun(ctx, "run_a", contract.RunSucceeded, "", json.RawMessage(`{"input_tokens":3}`)); err != nil {
		t.Fatal(err)
	}
	r, got, err := db.GetRun(ctx, "run_a")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != contract.RunSucceeded || r.Attempt != 1 || r.InboxUntilSeq != 7 || r.EndedAt.IsZero() || string(r.Usage) != `{"input_tokens":3}` {
		t.Errorf("run_a = %+v", r)
	}
	if diff := cmp.Diff(events, got); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	if _, _, err := db.GetRun(ctx, "run_nope"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("unknown run: %v", err)
	}
	runs, err := db.ListRuns(ctx, RunFilter{Agent: alice})
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListRuns = %v, %v", runs, err)
	}
	if n, err := db.FailRunningRuns(ctx, "daemon stopped during the run"); err != nil || n != 1 {
		t.Errorf("FailRunningRuns = %d, %v; want 1 (run_b)", n, err)
	}
	if r, _, err := db.GetRun(ctx, "run_b"); err != nil || r.State != contract.RunFailed || r.Error != "daemon stopped during the run" {
		t.Errorf("run_b after FailRunningRuns = %+v, %v", r, err)
	}
}

func TestWorkers(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if err := db.AddWorker(ctx, Worker{RunID: "run_a", PID: 10, PGID: 10, PluginPath: "/p/agent-worker-backend-mock"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Heartbeat(ctx, "run_a"); err != nil {
		t.Fatal(err)
	}
	ws, err := db.ListWorkers(ctx)
	if err != nil || len(ws) != 1 || ws[0].PID != 10 || ws[0].PluginPath != "/p/agent-worker-backend-mock" || ws[0].State != WorkerRunning {
		t.Fatalf("ListWorkers = %+v, %v", ws, err)
	}
	if _, err := db.HeartbeatAge(ctx, "run_nope"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("HeartbeatAge of no worker: %v, want not found", err)
	}
	if err := db.RemoveWorker(ctx, "run_a"); err != nil {
		t.Fatal(err)
	}
	if ws, err := db.ListWorkers(ctx); err != nil || len(ws) != 0 {
		t.Errorf("worker left after RemoveWorker: %+v, %v", ws, err)
	}
}

// A spare's row becomes its run's row once, and only once.
func TestClaimSpare(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if err := db.AddWorker(ctx, Worker{RunID: "spare_1", State: WorkerSpare, PID: 11, PGID: 11, PluginPath: "/p/mock"}); err != nil {
		t.Fatal(err)
	}
	if ws, err := db.ListWorkers(ctx); err != nil || len(ws) != 1 || ws[0].State != WorkerSpare {
		t.Fatalf("spare row = %+v, %v", ws, err)
	}
	if err := db.ClaimSpare(ctx, "spare_1", "run_a"); err != nil {
		t.Fatal(err)
	}
	if ws, err := db.ListWorkers(ctx); err != nil || len(ws) != 1 || ws[0].RunID != "run_a" || ws[0].State != WorkerRunning || ws[0].PID != 11 {
		t.Fatalf("claimed row = %+v, %v", ws, err)
	}
	if err := db.ClaimSpare(ctx, "spare_1", "run_b"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("second claim of one spare: %v, want not found", err)
	}
	if err := db.ClaimSpare(ctx, "run_a", "run_b"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("claim of a running worker: %v, want not found", err)
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	k := AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "claude"}); err != nil {
		t.Fatal(err)
	}
	if id, err := db.Session(ctx, k, "claude"); err != nil || id != "" {
		t.Fatalf("no session yet: %q, %v", id, err)
	}
	prev := ""
	for _, id := range []string{"s1", "s2"} {
		if saved, err := db.ReplaceSession(ctx, k, "claude", prev, id); err != nil || !saved {
			t.Fatalf("ReplaceSession(%q, %q) = %v, %v", prev, id, saved, err)
		}
		prev = id
	}
	if id, err := db.Session(ctx, k, "claude"); err != nil || id != "s2" {
		t.Errorf("session = %q, %v; want the latest, s2", id, err)
	}
	if id, err := db.Session(ctx, k, "codex"); err != nil || id != "" {
		t.Errorf("codex session = %q, %v; want none (sessions are per backend)", id, err)
	}
	if saved, err := db.ReplaceSession(ctx, k, "claude", "s1", "stale"); err != nil || saved {
		t.Errorf("ReplaceSession from an outdated session = %v, %v; want not saved", saved, err)
	}
}

func TestResetSessions(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	k := AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	if _, err := db.ResetSessions(ctx, k); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Fatalf("reset of a missing agent = %v, want not found", err)
	}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "sdk"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"sdk", "claude"} {
		if _, err := db.ReplaceSession(ctx, k, b, "", b+"-memory"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.ResetSessions(ctx, k); err != nil || n != 2 {
		t.Fatalf("ResetSessions = %d, %v; want both backends' sessions forgotten", n, err)
	}
	for _, b := range []string{"sdk", "claude"} {
		if id, err := db.Session(ctx, k, b); err != nil || id != "" {
			t.Errorf("%s session after reset = %q, %v; want none", b, id, err)
		}
	}
	// A run that started before the reset ends with the old memory and
	// more: it must not come back.
	if saved, err := db.ReplaceSession(ctx, k, "sdk", "sdk-memory", "sdk-memory+1"); err != nil {
		t.Errorf("ReplaceSession after the reset: %v", err)
	} else if saved {
		t.Error("a run that began before the reset saved its session; want it dropped")
	}
}

// A worker's heartbeat age is read on the store's clock, and a worker
// names the agent of its run.
func TestWorkerHeartbeatAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	db := openAt(t, testPath(t), Options{PoolSize: 2, Now: func() time.Time { return now }})
	ctx := t.Context()
	alice := AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.StartRun(ctx, Run{ID: "run_a", Agent: alice, Backend: "mock", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddWorker(ctx, Worker{RunID: "run_a", PID: 10, PGID: 10, PluginPath: "/p/mock"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := db.Heartbeat(ctx, "run_a"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(4 * time.Second)
	if age, err := db.HeartbeatAge(ctx, "run_a"); err != nil || age != 4*time.Second {
		t.Errorf("HeartbeatAge = %v, %v; want 4s", age, err)
	}
	ws, err := db.ListWorkers(ctx)
	if err != nil || len(ws) != 1 || ws[0].Agent != alice || ws[0].Backend != "mock" || !ws[0].HeartbeatAt.Equal(now.Add(-4*time.Second)) {
		t.Errorf("ListWorkers = %+v, %v", ws, err)
	}
}
