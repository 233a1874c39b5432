package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// inboxSeqs returns the seqs of k's inbox and checks that InboxDepth agrees.
func inboxSeqs(t *testing.T, db *DB, k AgentKey) []int64 {
	t.Helper()
	ms, err := db.Inbox(t.Context(), k, 1000)
	if err != nil {
		t.Fatalf("Inbox(%v): %v", k, err)
	}
	depth, err := db.InboxDepth(t.Context(), k)
	if err != nil {
		t.Fatalf("InboxDepth(%v): %v", k, err)
	}
	if depth != len(ms) {
		t.Errorf("%v: InboxDepth = %d but Inbox lists %d", k, depth, len(ms))
	}
	return seqsOf(ms)
}

func ack(t *testing.T, db *DB, k AgentKey, until int64) int64 {
	t.Helper()
	cursor, err := db.AckInbox(t.Context(), k, until)
	if err != nil {
		t.Fatalf("AckInbox(%v, %d): %v", k, until, err)
	}
	return cursor
}

func TestInbox(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice", "bob", "carol")
	alice, bob, carol := AgentKey{"alice", "team", "t"}, AgentKey{"bob", "team", "t"}, AgentKey{"carol", "team", "t"}
	post := func(sender, content, to string, recipients ...string) int64 {
		return send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: sender, Content: content, To: to, Recipients: recipients}).Seq
	}

	m1 := post("alice", "@bob first", "", "bob")
	post("bob", "no mentions", "")
	m2 := post("carol", "@all second", "", "alice", "bob")
	dm := post("alice", "psst", "carol", "carol")
	self := post("alice", "@alice @bob note to self", "", "alice", "bob")
	post("alice", "@dave is not here", "", "dave")

	// Mentions in channel order; the sender never gets its own message; a
	// DM reaches only its recipient; a non-member is dropped.
	for k, want := range map[AgentKey][]int64{
		alice: {m2},
		bob:   {m1, m2, self},
		carol: {dm},
	} {
		if diff := cmp.Diff(want, inboxSeqs(t, db, k)); diff != "" {
			t.Errorf("inbox of %v (-want +got):\n%s", k, diff)
		}
	}
	if n := queryInt(t, db, `SELECT count(*) FROM message_recipients WHERE agent = 'dave'`); n != 0 {
		t.Errorf("a non-member got %d inbox rows", n)
	}

	// Reading does not ack.
	if got := inboxSeqs(t, db, bob); len(got) != 3 {
		t.Errorf("second read of bob's inbox = %v, want the same 3 messages", got)
	}
	ms, err := db.Inbox(ctx, bob, 1)
	if err != nil || len(ms) != 1 || ms[0].Seq != m1 || ms[0].Content != "@bob first" || ms[0].Sender != "alice" {
		t.Errorf("Inbox(bob, limit 1) = %+v, %v; want m1 from alice", ms, err)
	}

	// Acking message 1 leaves message 2.
	if got := ack(t, db, bob, m1); got != m1 {
		t.Errorf("AckInbox returned cursor %d, want %d", got, m1)
	}
	if diff := cmp.Diff([]int64{m2, self}, inboxSeqs(t, db, bob)); diff != "" {
		t.Errorf("bob's inbox after acking m1 (-want +got):\n%s", diff)
	}
	// Acking an older seq, or the same one, is a no-op.
	if got := ack(t, db, bob, m1-1); got != m1 {
		t.Errorf("ack of an older seq moved the cursor to %d, want %d", got, m1)
	}
	ack(t, db, bob, m2)
	if got := ack(t, db, bob, m1); got != m2 {
		t.Errorf("ack of m1 after m2 returned %d, want %d", got, m2)
	}
	if c, err := db.InboxCursor(ctx, bob); err != nil || c != m2 {
		t.Errorf("InboxCursor(bob) = %d, %v; want %d", c, err, m2)
	}
	// Acking beyond the newest inbox message is refused and changes nothing.
	_, err = db.AckInbox(ctx, bob, self+1)
	if contract.ErrorCode(err) != contract.CodeInvalid || !strings.Contains(err.Error(), fmt.Sprintf("until_seq %d is beyond your newest inbox message (%d)", self+1, self)) {
		t.Errorf("ack beyond newest: err = %v, want invalid naming both seqs", err)
	}
	if c, err := db.InboxCursor(ctx, bob); err != nil || c != m2 {
		t.Errorf("cursor after a refused ack = %d, %v; want %d", c, err, m2)
	}
	if _, err := db.AckInbox(ctx, bob, -1); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("negative ack: err = %v, want invalid", err)
	}
	if c, err := db.InboxCursor(ctx, carol); err != nil || c != 0 {
		t.Errorf("cursor of an agent that never acked = %d, %v; want 0", c, err)
	}
	if got := ack(t, db, bob, self); got != self || len(inboxSeqs(t, db, bob)) != 0 {
		t.Errorf("ack through the newest: cursor %d, want %d and an empty inbox", got, self)
	}

	// A deleted and re-created agent starts with an empty inbox and cursor.
	if err := db.DeleteAgent(ctx, alice); err != nil {
		t.Fatal(err)
	}
	createTeam(t, db, team, "alice")
	if got := inboxSeqs(t, db, alice); len(got) != 0 {
		t.Errorf("re-created alice inherits inbox %v", got)
	}
	if c, err := db.InboxCursor(ctx, alice); err != nil || c != 0 {
		t.Errorf("re-created alice's cursor = %d, %v; want 0", c, err)
	}
	m3 := post("bob", "@alice welcome back", "", "alice")
	if diff := cmp.Diff([]int64{m3}, inboxSeqs(t, db, alice)); diff != "" {
		t.Errorf("re-created alice's inbox (-want +got):\n%s", diff)
	}
}

func TestInboxErrors(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	createTeam(t, db, Scope{"team", "t"}, "alice")
	alice, ghost := AgentKey{"alice", "team", "t"}, AgentKey{"ghost", "team", "t"}
	for name, tc := range map[string]struct {
		call func() error
		code contract.Code
	}{
		"inbox of unknown agent":  {func() error { _, err := db.Inbox(t.Context(), ghost, 0); return err }, contract.CodeNotFound},
		"cursor of unknown agent": {func() error { _, err := db.InboxCursor(t.Context(), ghost); return err }, contract.CodeNotFound},
		"ack of unknown agent":    {func() error { _, err := db.AckInbox(t.Context(), ghost, 0); return err }, contract.CodeNotFound},
		"limit above 1000":        {func() error { _, err := db.Inbox(t.Context(), alice, 1001); return err }, contract.CodeInvalid},
		"negative limit":          {func() error { _, err := db.Inbox(t.Context(), alice, -1); return err }, contract.CodeInvalid},
		"ack with empty inbox":    {func() error { _, err := db.AckInbox(t.Context(), alice, 1); return err }, contract.CodeInvalid},
	} {
		if err := tc.call(); contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: err = %v, want code %q", name, err, tc.code)
		}
	}
}

func TestInboxUsesIndex(t *testing.T) {
	sqliteOnly(t, "SQLite's query plan")
	t.Parallel()
	db := openTest(t)
	plan := queryPlan(t, db, inboxSQL, "team", "t", "alice", 100)
	if !strings.Contains(plan, "SEARCH r USING PRIMARY KEY (workflow=? AND tag=? AND agent=? AND seq>?)") ||
		!strings.Contains(plan, "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)") ||
		strings.Contains(plan, "SCAN") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("inbox query is not a primary-key range scan joined by seq:\n%s", plan)
	}
	plan = queryPlan(t, db, inboxStateSQL, "team", "t", "alice")
	if strings.Contains(strings.ReplaceAll(plan, "SCAN CONSTANT ROW", ""), "SCAN") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("inbox state query scans:\n%s", plan)
	}
}

// TestConcurrentAppend has many writers post at once and checks that the
// total order has no gaps and every inbox gets exactly its messages.
func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	const agents, writers, perWriter = 50, 20, 100 // the full 50×200 runs end to end through MCP in host
	db := openAt(t, testPath(t), Options{PoolSize: 8})
	team := Scope{"team", "t"}
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("a%02d", i)
	}
	createTeam(t, db, team, names...)

	// Writer w's j-th message comes from agent w and mentions two agents
	// (sometimes the same one twice, sometimes the sender).
	mentions := func(w, j int) []string {
		return []string{names[(w+j)%agents], names[(3*w+7*j+1)%agents]}
	}
	seqs := make([][]int64, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for j := range perWriter {
				m, err := db.AppendMessage(t.Context(), NewMessage{Workflow: "team", Tag: "t", Sender: names[w],
					Content: fmt.Sprintf("%d/%d", w, j), Recipients: mentions(w, j)})
				if err != nil {
					errs[w] = err
					return
				}
				seqs[w] = append(seqs[w], m.Seq)
			}
		})
	}
	wg.Wait()
	t.Logf("%d appends in %v", writers*perWriter, time.Since(start))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	var all []int64
	want := map[string][]int64{}
	for w := range writers {
		for j, seq := range seqs[w] {
			all = append(all, seq)
			seen := map[string]bool{names[w]: true}
			for _, r := range mentions(w, j) {
				if !seen[r] {
					seen[r] = true
					want[r] = append(want[r], seq)
				}
			}
		}
	}
	slices.Sort(all)
	for i, seq := range all {
		if seq != int64(i+1) {
			t.Fatalf("sorted seqs[%d] = %d, want %d: seqs are not exactly 1..%d", i, seq, i+1, len(all))
		}
	}
	if n := queryInt(t, db, `SELECT count(*) FROM messages`); n != writers*perWriter {
		t.Errorf("messages has %d rows, want %d", n, writers*perWriter)
	}
	for _, name := range names {
		slices.Sort(want[name])
		if diff := cmp.Diff(want[name], inboxSeqs(t, db, AgentKey{name, "team", "t"})); diff != "" {
			t.Errorf("inbox of %s (-want +got):\n%s", name, diff)
		}
	}
}

func TestSetAgentStatus(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	db := openAt(t, path, Options{})
	ctx := t.Context()
	alice := AgentKey{"alice", "team", "t"}
	createTeam(t, db, Scope{"team", "t"}, "alice")
	str := func(s string) *string { return &s }
	get := func() (string, string) {
		t.Helper()
		a, err := db.GetAgent(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		return a.Status, a.Task
	}

	for _, step := range []struct {
		status, task         *string
		wantStatus, wantTask string
	}{
		{str("working"), nil, "working", ""},
		{nil, str("review #12"), "working", "review #12"},
		{str("blocked"), str("waiting for bob"), "blocked", "waiting for bob"},
		{nil, nil, "blocked", "waiting for bob"},
		{str(""), nil, "", "waiting for bob"},
		{nil, str(strings.Repeat("é", 200)), "", strings.Repeat("é", 200)},
	} {
		if err := db.SetAgentStatus(ctx, alice, step.status, step.task); err != nil {
			t.Fatal(err)
		}
		if s, task := get(); s != step.wantStatus || task != step.wantTask {
			t.Errorf("after SetAgentStatus: status %q task %q; want %q %q", s, task, step.wantStatus, step.wantTask)
		}
	}

	for name, tc := range map[string]struct {
		k            AgentKey
		status, task *string
		code         contract.Code
	}{
		"status too long": {alice, str(strings.Repeat("x", 201)), nil, contract.CodeInvalid},
		"task too long":   {alice, str("ok"), str(strings.Repeat("x", 201)), contract.CodeInvalid},
		"unknown agent":   {AgentKey{"ghost", "team", "t"}, str("working"), nil, contract.CodeNotFound},
	} {
		if err := db.SetAgentStatus(ctx, tc.k, tc.status, tc.task); contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: err = %v, want code %q", name, err, tc.code)
		}
	}
	if s, _ := get(); s != "" {
		t.Errorf("a refused update changed status to %q", s)
	}

	if err := db.SetAgentStatus(ctx, alice, str("reviewing"), nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openAt(t, path, Options{})
	if s, task := get(); s != "reviewing" || task != strings.Repeat("é", 200) {
		t.Errorf("after re-open: status %q task %q", s, task)
	}
	if a, err := db.CreateAgent(ctx, Agent{Name: "bob", Workflow: "team", Tag: "t", Status: "new"}); err != nil || a.Status != "new" {
		t.Errorf("CreateAgent with a status = %+v, %v", a, err)
	}
}
