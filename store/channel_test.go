package store

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// createTeam creates the named agents in scope s.
func createTeam(t *testing.T, db *DB, s Scope, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := db.CreateAgent(t.Context(), Agent{Name: n, Workflow: s.Workflow, Tag: s.Tag}); err != nil {
			t.Fatal(err)
		}
	}
}

// send appends a message and fails the test on error.
func send(t *testing.T, db *DB, m NewMessage) Message {
	t.Helper()
	out, err := db.AppendMessage(t.Context(), m)
	if err != nil {
		t.Fatalf("AppendMessage(%+v): %v", m, err)
	}
	return out
}

// readChannel reads a page and fails the test on error.
func readChannel(t *testing.T, db *DB, s Scope, o ReadOptions) []Message {
	t.Helper()
	ms, err := db.ReadChannel(t.Context(), s, o)
	if err != nil {
		t.Fatalf("ReadChannel(%v, %+v): %v", s, o, err)
	}
	return ms
}

func seqsOf(ms []Message) []int64 {
	var seqs []int64
	for _, m := range ms {
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

// queryPlan returns the EXPLAIN QUERY PLAN lines of query.
func queryPlan(t *testing.T, db *DB, query string, args ...any) string {
	t.Helper()
	var plan []string
	err := db.read(t.Context(), func(conn querier) error {
		return conn.execute("EXPLAIN QUERY PLAN "+query, &execOptions{
			Args:       args,
			ResultFunc: func(s row) error { plan = append(plan, s.ColumnText(3)); return nil },
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

func TestAppendAndReadChannel(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice", "bob", "carol")

	var sent []Message
	for _, m := range []NewMessage{
		{Sender: "alice", Content: "@bob @carol @bob look", Recipients: []string{"bob", "carol", "bob"}},
		{Sender: "system", Content: "proposal p1 resolved", Kind: KindSystem},
		{Sender: "bob", Content: "done", Recipients: []string{}},
		{Sender: "carol", Content: "tool call", Kind: KindTool, Recipients: []string{"alice"}},
	} {
		m.Workflow, m.Tag = team.Workflow, team.Tag
		sent = append(sent, send(t, db, m))
	}
	for i := 1; i < len(sent); i++ {
		if sent[i].Seq <= sent[i-1].Seq {
			t.Errorf("seq %d of message %d does not follow %d", sent[i].Seq, i, sent[i-1].Seq)
		}
	}
	if diff := cmp.Diff([]string{"bob", "carol"}, sent[0].Recipients); diff != "" {
		t.Errorf("recipients are not de-duplicated (-want +got):\n%s", diff)
	}

	got := readChannel(t, db, team, ReadOptions{Viewer: "bob"})
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Errorf("ReadChannel differs from what was appended (-appended +read):\n%s", diff)
	}
	if got[1].Kind != KindSystem || got[1].Sender != "system" {
		t.Errorf("system line read back as kind %q from %q", got[1].Kind, got[1].Sender)
	}

	latest, err := db.LatestSeq(t.Context(), team)
	if err != nil || latest != sent[len(sent)-1].Seq {
		t.Errorf("LatestSeq = %d, %v; want %d", latest, err, sent[len(sent)-1].Seq)
	}
	if latest, err := db.LatestSeq(t.Context(), Scope{"team", "empty"}); err != nil || latest != 0 {
		t.Errorf("LatestSeq of an empty channel = %d, %v; want 0", latest, err)
	}
}

func TestReadChannelPaging(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice")
	var all []int64
	for range 60 {
		all = append(all, send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: "x"}).Seq)
	}

	for name, tc := range map[string]struct {
		o    ReadOptions
		want []int64
	}{
		"default is the newest 50": {ReadOptions{}, all[10:]},
		"newest 3, oldest first":   {ReadOptions{Limit: 3}, all[57:]},
		"3 after the 5th":          {ReadOptions{SinceSeq: all[4], Limit: 3}, all[5:8]},
		"since pages forward":      {ReadOptions{SinceSeq: all[0]}, all[1:51]},
		"since the newest":         {ReadOptions{SinceSeq: all[59]}, nil},
		"limit at the maximum":     {ReadOptions{Limit: 1000}, all},
	} {
		if diff := cmp.Diff(tc.want, seqsOf(readChannel(t, db, team, tc.o))); diff != "" {
			t.Errorf("%s: seqs (-want +got):\n%s", name, diff)
		}
	}

	for name, o := range map[string]ReadOptions{
		"limit above 1000": {Limit: 1001},
		"negative limit":   {Limit: -1},
		"negative since":   {SinceSeq: -1},
	} {
		if _, err := db.ReadChannel(t.Context(), team, o); contract.ErrorCode(err) != contract.CodeInvalid {
			t.Errorf("%s: err = %v, want invalid", name, err)
		}
	}
}

func TestReadChannelDirectMessages(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice", "bob", "carol")
	public := send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "carol", Content: "hello all"})
	dm := send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "alice", To: "bob", Content: "psst", Recipients: []string{"bob"}})

	for viewer, want := range map[string][]int64{
		"alice": {public.Seq, dm.Seq},
		"bob":   {public.Seq, dm.Seq},
		"carol": {public.Seq},
		"":      {public.Seq, dm.Seq},
	} {
		for _, o := range []ReadOptions{{Viewer: viewer}, {Viewer: viewer, SinceSeq: public.Seq - 1}} {
			if diff := cmp.Diff(want, seqsOf(readChannel(t, db, team, o))); diff != "" {
				t.Errorf("viewer %q, %+v (-want +got):\n%s", viewer, o, diff)
			}
		}
	}
	if got := readChannel(t, db, team, ReadOptions{Viewer: "bob"}); got[1].To != "bob" {
		t.Errorf("DM read back with To %q, want bob", got[1].To)
	}
}

func TestMessageWithResource(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice", "bob")
	long := strings.Repeat("a long report. ", 400)

	m := send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: "@bob see resource",
		Recipients: []string{"bob"}, Resource: &NewResource{Type: "markdown", Content: long}})
	if m.ResourceID == "" {
		t.Fatal("message has no resource id")
	}
	r, err := db.GetResource(t.Context(), team, m.ResourceID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != long || r.Type != "markdown" || r.CreatedBy != "alice" {
		t.Errorf("resource = %q by %q (%d bytes), want markdown by alice (%d bytes)", r.Type, r.CreatedBy, len(r.Content), len(long))
	}
	if got := readChannel(t, db, team, ReadOptions{}); len(got) != 1 || got[0].ResourceID != m.ResourceID {
		t.Errorf("channel = %+v, want one message pointing at %s", got, m.ResourceID)
	}

	// A resource that cannot be stored takes its message down with it.
	_, err = db.AppendMessage(t.Context(), NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: "@bob broken",
		Recipients: []string{"bob"}, Resource: &NewResource{Type: "json", Content: "{not json"}})
	if contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("message with invalid JSON resource: err = %v, want invalid", err)
	}
	for table, want := range map[string]int{"messages": 1, "resources": 1, "message_recipients": 1} {
		if n := queryInt(t, db, `SELECT count(*) FROM `+table); n != want {
			t.Errorf("%s has %d rows after the failed append, want %d", table, n, want)
		}
	}
}

func TestReadChannelUsesIndex(t *testing.T) {
	sqliteOnly(t, "SQLite's query plan")
	t.Parallel()
	db := openTest(t)
	for name, tc := range map[string]struct {
		query string
		args  []any
	}{
		"newest": {readNewestSQL, []any{"team", "t", "bob", 50}},
		"since":  {readSinceSQL, []any{"team", "t", "bob", 50, 7}},
		"latest": {latestSeqSQL, []any{"team", "t"}},
	} {
		plan := queryPlan(t, db, tc.query, tc.args...)
		if !strings.Contains(plan, "INDEX messages_by_workflow (workflow=? AND tag=?") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: channel read does not walk messages_by_workflow in order:\n%s", name, plan)
		}
	}
}

// TestScopeIsolation checks that two tags of one workflow share nothing,
// even agents of the same names.
func TestScopeIsolation(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	a, b := Scope{"team", "a"}, Scope{"team", "b"}
	createTeam(t, db, a, "alice", "bob")
	createTeam(t, db, b, "alice", "bob")
	aliceA, aliceB := AgentKey{"alice", "team", "a"}, AgentKey{"alice", "team", "b"}
	bobB := AgentKey{"bob", "team", "b"}

	m := send(t, db, NewMessage{Workflow: "team", Tag: "a", Sender: "alice", Content: "@bob hi", Recipients: []string{"bob"},
		Resource: &NewResource{Content: "details"}})
	tokA, err := db.CreateToken(ctx, aliceA, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	tokB, err := db.CreateToken(ctx, aliceB, "run-b")
	if err != nil {
		t.Fatal(err)
	}

	if got := readChannel(t, db, b, ReadOptions{}); len(got) != 0 {
		t.Errorf("channel of %v shows %d messages of %v", b, len(got), a)
	}
	if seq, err := db.LatestSeq(ctx, b); err != nil || seq != 0 {
		t.Errorf("LatestSeq(%v) = %d, %v; want 0", b, seq, err)
	}
	if inbox, err := db.Inbox(ctx, bobB, 0); err != nil || len(inbox) != 0 {
		t.Errorf("bob@team:b inbox = %v, %v; want empty", inbox, err)
	}
	if n, err := db.InboxDepth(ctx, bobB); err != nil || n != 0 {
		t.Errorf("bob@team:b depth = %d, %v; want 0", n, err)
	}
	if _, err := db.GetResource(ctx, b, m.ResourceID); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("resource of %v read from %v: err = %v, want not found", a, b, err)
	}
	if _, err := db.GetResource(ctx, a, m.ResourceID); err != nil {
		t.Errorf("resource in its own scope: %v", err)
	}
	if n, err := db.RevokeAgentTokens(ctx, aliceB); err != nil || n != 1 {
		t.Errorf("RevokeAgentTokens(%v) = %d, %v; want 1", aliceB, n, err)
	}
	if tok, err := db.LookupToken(ctx, tokA); err != nil || tok.Key != aliceA {
		t.Errorf("token of %v after revoking %v's: %+v, %v", aliceA, aliceB, tok, err)
	}
	if _, err := db.LookupToken(ctx, tokB); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("revoked token of %v: err = %v, want not found", aliceB, err)
	}
}

// The loop guard's count: agent messages in a row pause the workflow at
// the limit (in the message's transaction), a human or system line resets
// the count, 0 turns it off, a reload keeps the pause and setting the
// workflow running again starts a new count.
func TestLoopGuardCount(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main", LoopGuard: 3, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"alice", "bob"} {
		if _, err := db.CreateAgent(ctx, Agent{Name: n, Workflow: "team", Tag: "main", Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(from, kind string) bool {
		t.Helper()
		m, err := db.AppendMessage(ctx, NewMessage{Workflow: "team", Tag: "main", Sender: from, Kind: kind, Content: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		return m.LoopGuardTripped
	}
	state := func() contract.WorkflowState {
		w, err := db.GetWorkflow(ctx, "team", "main")
		if err != nil {
			t.Fatal(err)
		}
		return w.State
	}
	if send("alice", "") || send("bob", "") || send("user", "") || send("alice", "") || send("bob", "") {
		t.Fatal("tripped before three agent messages in a row")
	}
	if !send("alice", "") || state() != contract.WorkflowPaused {
		t.Fatalf("the third agent message in a row: state %s", state())
	}
	if send("bob", "") || state() != contract.WorkflowPaused {
		t.Error("a paused workflow tripped again")
	}
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main", LoopGuard: 3}); err != nil || state() != contract.WorkflowPaused {
		t.Errorf("a reload resumed a paused workflow: %s, %v", state(), err)
	}
	if err := db.SetWorkflowState(ctx, "team", "main", contract.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	if send("alice", "") || send("bob", KindSystem) || send("alice", "") || send("bob", "") {
		t.Error("the count went on across a resume, or a system line did not reset it")
	}
	if !send("alice", "") {
		t.Error("three agent messages after the resume did not trip")
	}
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main", LoopGuard: 0, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if send("alice", "") {
			t.Fatal("loop_guard 0 tripped")
		}
	}
}
