package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// settleState is everything a settle may change, read back for comparison.
type settleState struct {
	Cursor     int64
	RunState   contract.RunState
	Ended      bool
	Usage      string
	Workers    int
	FromAlice  int
	Resources  int
	BobsInbox  int
	AliceInbox int
}

func readSettleState(t *testing.T, db *DB, runID string) settleState {
	t.Helper()
	alice, bob := AgentKey{"alice", "team", "t"}, AgentKey{"bob", "team", "t"}
	cursor, err := db.InboxCursor(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := db.GetRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return settleState{
		Cursor: cursor, RunState: r.State, Ended: !r.EndedAt.IsZero(), Usage: string(r.Usage),
		Workers:    queryInt(t, db, `SELECT count(*) FROM workers WHERE run_id = ?`, runID),
		FromAlice:  queryInt(t, db, `SELECT count(*) FROM messages WHERE sender = 'alice'`),
		Resources:  queryInt(t, db, `SELECT count(*) FROM resources`),
		BobsInbox:  len(inboxSeqs(t, db, bob)),
		AliceInbox: len(inboxSeqs(t, db, alice)),
	}
}

// startSettleRun sets up alice with one unread message and a running run
// that was shown it, with a live workers row; it returns the run's id and
// the channel's seq before the run.
func startSettleRun(t *testing.T, db *DB) (runID string, before int64) {
	t.Helper()
	createTeam(t, db, Scope{"team", "t"}, "alice", "bob")
	m := send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "user", Content: "@alice hi", Recipients: []string{"alice"}})
	runID = "run_settle"
	if _, err := db.StartRun(t.Context(), Run{ID: runID, Agent: AgentKey{"alice", "team", "t"}, Backend: "mock", Attempt: 1, InboxUntilSeq: m.Seq}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddWorker(t.Context(), Worker{RunID: runID, PID: 10, PGID: 10, PluginPath: "/p/mock"}); err != nil {
		t.Fatal(err)
	}
	return runID, m.Seq
}

func aliceSays(content string) *NewMessage {
	return &NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: content, Recipients: []string{"bob"}}
}

func TestSettleRunPostsAcksAndEndsOnce(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	runID, before := startSettleRun(t, db)
	usage := json.RawMessage(`{"InputTokens":3}`)
	done, err := db.SettleRun(t.Context(), Settlement{RunID: runID, Usage: usage, Reply: aliceSays("@bob done"), SinceSeq: before})
	if err != nil || !done.Posted || done.Reply.Seq <= before || done.Reply.Sender != "alice" || done.Idle {
		t.Fatalf("SettleRun = %+v, %v; want alice's reply posted and her state left alone", done, err)
	}
	// The workers row outlives the settle: the plugin process is stopped
	// after it, and the row goes then (RemoveWorker).
	want := settleState{Cursor: before, RunState: contract.RunSucceeded, Ended: true, Usage: string(usage), Workers: 1, FromAlice: 1, BobsInbox: 1}
	if diff := cmp.Diff(want, readSettleState(t, db, runID)); diff != "" {
		t.Errorf("after settle (-want +got):\n%s", diff)
	}

	// A second settle of the same run (a retry that thinks the first was
	// lost) changes nothing: no second reply, no second ack.
	done, err = db.SettleRun(t.Context(), Settlement{RunID: runID, Reply: aliceSays("@bob done"), SinceSeq: before})
	if contract.ErrorCode(err) != contract.CodeConflict || done.Posted {
		t.Errorf("second SettleRun = %v, posted %v; want conflict", err, done.Posted)
	}
	if diff := cmp.Diff(want, readSettleState(t, db, runID)); diff != "" {
		t.Errorf("after a second settle (-want +got):\n%s", diff)
	}
	if _, err := db.SettleRun(t.Context(), Settlement{RunID: "run_nope"}); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("settle of an unknown run = %v, want not found", err)
	}
}

// A run's end is one write: its last transcript events and the agent's
// move back to idle commit with it; a pause that came during the run stays.
func TestSettleRunWritesTheTranscriptAndIdlesTheAgent(t *testing.T) {
	t.Parallel()
	for _, paused := range []bool{false, true} {
		db := openTest(t)
		runID, before := startSettleRun(t, db)
		alice := AgentKey{"alice", "team", "t"}
		if moved, err := db.MoveAgentState(t.Context(), alice, []contract.AgentState{contract.AgentIdle}, contract.AgentRunning, ""); err != nil || !moved {
			t.Fatalf("move alice to running = %v, %v", moved, err)
		}
		if paused {
			if _, err := db.MoveAgentState(t.Context(), alice, []contract.AgentState{contract.AgentRunning}, contract.AgentPaused, ""); err != nil {
				t.Fatal(err)
			}
		}
		events := []RunEvent{{N: 1, Kind: "text", Data: `{"text":"thinking"}`, At: time.Now()}, {N: 2, Kind: "result", Data: `{"text":"done"}`, At: time.Now()}}
		done, err := db.SettleRun(t.Context(), Settlement{RunID: runID, Reply: aliceSays("@bob done"), SinceSeq: before, Events: events, Idle: true})
		if err != nil || done.Idle == paused {
			t.Fatalf("paused %v: SettleRun = %+v, %v; want moved to idle %v", paused, done, err, !paused)
		}
		want := contract.AgentIdle
		if paused {
			want = contract.AgentPaused
		}
		a, err := db.GetAgent(t.Context(), alice)
		if err != nil || a.State != want {
			t.Errorf("paused %v: alice is %s (%v), want %s", paused, a.State, err, want)
		}
		r, transcript, err := db.GetRun(t.Context(), runID)
		if err != nil || r.State != contract.RunSucceeded || len(transcript) != 2 || transcript[1].Kind != "result" {
			t.Errorf("paused %v: run %s with transcript %+v (%v), want succeeded with both events", paused, r.State, transcript, err)
		}
	}
}

func TestSettleRunKeepsQuietWhenTheAgentSpoke(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	runID, before := startSettleRun(t, db)
	send(t, db, *aliceSays("@bob answered with my tools")) // during the run
	done, err := db.SettleRun(t.Context(), Settlement{RunID: runID, Reply: aliceSays("@bob final result"), SinceSeq: before})
	if err != nil || done.Posted {
		t.Fatalf("SettleRun = posted %v, %v; want nothing posted", done.Posted, err)
	}
	want := settleState{Cursor: before, RunState: contract.RunSucceeded, Ended: true, Usage: "{}", Workers: 1, FromAlice: 1, BobsInbox: 1}
	if diff := cmp.Diff(want, readSettleState(t, db, runID)); diff != "" {
		t.Errorf("after settle (-want +got):\n%s", diff)
	}
}

// A settle that fails part-way leaves no trace: the ack that ran before the
// failing reply is rolled back with it, so the run can be redone.
func TestSettleRunIsAtomic(t *testing.T) {
	t.Parallel()
	for name, reply := range map[string]*NewMessage{
		// The reply's resource is refused after the ack was written.
		"bad resource": {Workflow: "team", Tag: "t", Sender: "alice", Content: "stub", Recipients: []string{"bob"},
			Resource: &NewResource{Type: "pdf", Content: "long"}},
		// The reply claims another sender than the run's agent.
		"wrong sender": {Workflow: "team", Tag: "t", Sender: "bob", Content: "@alice hi"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openTest(t)
			runID, before := startSettleRun(t, db)
			want := readSettleState(t, db, runID)
			if want.RunState != contract.RunRunning || want.Workers != 1 || want.AliceInbox != 1 {
				t.Fatalf("before settle: %+v", want)
			}
			if done, err := db.SettleRun(t.Context(), Settlement{RunID: runID, Reply: reply, SinceSeq: before}); contract.ErrorCode(err) != contract.CodeInvalid || done.Posted {
				t.Fatalf("SettleRun = posted %v, %v; want invalid", done.Posted, err)
			}
			if diff := cmp.Diff(want, readSettleState(t, db, runID)); diff != "" {
				t.Errorf("a failed settle changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSettleRunStoresALongReplyWithItsResource(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	runID, before := startSettleRun(t, db)
	reply := aliceSays("@bob [long message stored as resource res_0123456789abcdef]")
	reply.Resource = &NewResource{ID: "res_0123456789abcdef", Content: "the whole text"}
	done, err := db.SettleRun(t.Context(), Settlement{RunID: runID, Reply: reply, SinceSeq: before})
	m := done.Reply
	if err != nil || !done.Posted || m.ResourceID != "res_0123456789abcdef" {
		t.Fatalf("SettleRun = %+v, %v", done, err)
	}
	res, err := db.GetResource(t.Context(), Scope{"team", "t"}, m.ResourceID)
	if err != nil || res.Content != "the whole text" || res.CreatedBy != "alice" {
		t.Errorf("resource = %+v, %v", res, err)
	}
}
