package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A member whose heartbeat stopped loses its work to the others in one
// step: its runs in flight fail, its running agents go back to idle, its
// plugin processes are handed over for killing, and it learns at its next
// heartbeat that it is no longer a member. A live member keeps everything.
func TestRecoverDeadDaemonsTakesBackOnlyTheDeadMembersWork(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := testPath(t)
	ctx := t.Context()
	dead := openAt(t, path, Options{Now: clk.Now, Daemon: "dead"})
	live := openAt(t, path, Options{Now: clk.Now, Daemon: "live"})
	team := Scope{"team", "t"}
	createTeam(t, dead, team, "alice", "bob", "carol", "dave")
	for _, db := range []*DB{dead, live} {
		if err := db.RegisterDaemon(ctx, Daemon{ID: db.daemon, Host: "h", PID: 1, Address: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	startRunning := func(db *DB, agent, runID string) {
		t.Helper()
		k := AgentKey{Name: agent, Workflow: team.Workflow, Tag: team.Tag}
		if _, err := db.StartRun(ctx, Run{ID: runID, Agent: k, Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddWorker(ctx, Worker{RunID: runID, PID: 42, PGID: 42, PluginPath: "/p"}); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `UPDATE agents SET state = 'running' WHERE workflow = ? AND tag = ? AND name = ?`, team.Workflow, team.Tag, agent)
	}
	startRunning(dead, "alice", "run-a")
	startRunning(live, "bob", "run-b")
	// Carol and dave were moved to running and have no run recorded yet
	// (or theirs has ended and they are not idle again yet): carol by the
	// member that dies, dave by the live one.
	for db, name := range map[*DB]string{dead: "carol", live: "dave"} {
		k := AgentKey{Name: name, Workflow: team.Workflow, Tag: team.Tag}
		if moved, err := db.MoveAgentState(ctx, k, []contract.AgentState{contract.AgentIdle}, contract.AgentRunning, ""); err != nil || !moved {
			t.Fatalf("move %s to running = %v, %v", name, moved, err)
		}
	}

	clk.Set(clk.Now().Add(20 * time.Second))
	if err := live.DaemonHeartbeat(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	got, err := live.RecoverDeadDaemons(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Daemon.ID != "dead" {
		t.Fatalf("recovered %+v, want the dead member only", got)
	}
	r := got[0]
	if len(r.Runs) != 1 || r.Runs[0].ID != "run-a" || r.Runs[0].Daemon != "dead" {
		t.Errorf("runs taken back = %+v, want run-a", r.Runs)
	}
	want := []AgentKey{{Name: "alice", Workflow: "team", Tag: "t"}, {Name: "carol", Workflow: "team", Tag: "t"}}
	if diff := cmp.Diff(want, r.Agents); diff != "" {
		t.Errorf("agents back to idle (-want +got):\n%s", diff)
	}
	if len(r.Workers) != 1 || r.Workers[0].PID != 42 {
		t.Errorf("workers handed over = %+v, want pid 42", r.Workers)
	}
	runA, _, err := live.GetRun(ctx, "run-a")
	if err != nil || runA.State != contract.RunFailed || runA.Error == "" {
		t.Errorf("run-a = %+v (err %v), want failed with a reason", runA, err)
	}
	runB, _, err := live.GetRun(ctx, "run-b")
	if err != nil || runB.State != contract.RunRunning || runB.Daemon != "live" {
		t.Errorf("run-b = %+v (err %v), want still running on live", runB, err)
	}
	for name, want := range map[string]contract.AgentState{"alice": contract.AgentIdle, "bob": contract.AgentRunning, "carol": contract.AgentIdle, "dave": contract.AgentRunning} {
		a, err := live.GetAgent(ctx, AgentKey{Name: name, Workflow: "team", Tag: "t"})
		if err != nil || a.State != want {
			t.Errorf("%s = %v (err %v), want %v", name, a.State, err, want)
		}
	}
	if err := dead.DaemonHeartbeat(ctx, "dead"); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("heartbeat of a member found dead = %v, want a conflict", err)
	}
	if again, err := live.RecoverDeadDaemons(ctx, 10*time.Second); err != nil || len(again) != 0 {
		t.Errorf("second recovery = %+v, %v; want nothing", again, err)
	}
	ds, err := live.ListDaemons(ctx, time.Hour)
	if err != nil || len(ds) != 2 || ds[0].ID != "live" || !ds[0].StoppedAt.IsZero() || ds[1].StoppedAt.IsZero() {
		t.Errorf("members = %+v (err %v), want live first, then dead as stopped", ds, err)
	}
}

// The first daemon's value of a shared setting wins; later ones read it.
func TestSharedSettingFirstValueWins(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	for _, candidate := range []string{"first", "second"} {
		got, err := db.SharedSetting(t.Context(), "token", candidate)
		if err != nil || got != "first" {
			t.Errorf("SharedSetting(%q) = %q, %v; want first", candidate, got, err)
		}
	}
}

// A token ended through one member is refused by every other at once: in a
// cluster no member keeps tokens it found live.
func TestATokenRevokedThroughOneMemberIsRefusedByAnother(t *testing.T) {
	if testEngine != "postgres" {
		t.Skip("PostgreSQL only: one daemon holds a SQLite file (its home's lock), so no other member can revoke behind its cache")
	}
	t.Parallel()
	path := testPath(t)
	a := openAt(t, path, Options{Daemon: "a"})
	b := openAt(t, path, Options{Daemon: "b"})
	createTeam(t, a, Scope{"team", "t"}, "alice")
	k := AgentKey{Name: "alice", Workflow: "team", Tag: "t"}
	tok, err := a.CreateToken(t.Context(), k, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LookupToken(t.Context(), tok); err != nil {
		t.Fatalf("b does not know a's token: %v", err)
	}
	if err := a.RevokeToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if _, err := b.LookupToken(t.Context(), tok); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("b after a revoked the token: %v, want not found", err)
	}
}

// A member that rejoins with its id (a restarted daemon) shows what it is
// now: its new pid, address and start, not the previous process's (issue
// 27, item 7).
func TestRejoinedMemberShowsItsNewProcess(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	db := openAt(t, testPath(t), Options{Now: clk.Now, Daemon: "m1"})
	ctx := t.Context()
	if err := db.RegisterDaemon(ctx, Daemon{ID: "m1", Host: "old-host", PID: 100, Address: "127.0.0.1:1000", Version: "v1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DaemonStopped(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	if err := db.RegisterDaemon(ctx, Daemon{ID: "m1", Host: "new-host", PID: 200, Address: "127.0.0.1:2000", Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	ds, err := db.ListDaemons(ctx, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("members = %+v, %v; want one", ds, err)
	}
	got := ds[0]
	if got.PID != 200 || got.Address != "127.0.0.1:2000" || got.Host != "new-host" || got.Version != "v2" || !got.StartedAt.Equal(clk.t) || !got.StoppedAt.IsZero() {
		t.Errorf("the rejoined member = %+v; want pid 200 at 127.0.0.1:2000 on new-host, v2, started %v, not stopped", got, clk.t)
	}
}

// A message gives an inbox row to each recipient who is a member, never
// to its sender or to a name that left the team, and an agent's message
// lengthens the agent streak (PostgreSQL writes all of it in one
// statement; SQLite in several).
func TestAppendMessageInboxesAndStreak(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	for _, name := range []string{"alice", "bob"} {
		if _, err := db.CreateAgent(ctx, Agent{Name: name, Workflow: "wf", Tag: "main", Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "@bob @alice @gone hi",
		Recipients: []string{"bob", "alice", "gone", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Seq == 0 || !cmp.Equal(m.Recipients, []string{"bob", "alice", "gone"}) {
		t.Errorf("appended %+v: want a seq and the recipients deduplicated in order", m)
	}
	for name, want := range map[string]int{"alice": 0, "bob": 1, "gone": 0} {
		if got := queryInt(t, db, `SELECT count(*) FROM message_recipients WHERE agent = ? AND seq = ?`, name, m.Seq); got != want {
			t.Errorf("inbox rows of %s: %d, want %d", name, got, want)
		}
	}
	if got := queryInt(t, db, `SELECT agent_streak FROM workflows WHERE name = 'wf' AND tag = 'main'`); got != 1 {
		t.Errorf("agent streak after an agent's message: %d, want 1", got)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "a tool line", KeepStreak: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "again"}); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, db, `SELECT agent_streak FROM workflows WHERE name = 'wf' AND tag = 'main'`); got != 2 {
		t.Errorf("agent streak after a line that keeps it and another agent message: %d, want 2", got)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "user", Content: "stop"}); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, db, `SELECT agent_streak FROM workflows WHERE name = 'wf' AND tag = 'main'`); got != 0 {
		t.Errorf("agent streak after a human's message: %d, want 0", got)
	}
}
