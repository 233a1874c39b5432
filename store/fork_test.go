package store

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// forkFixture is wf:main's history on a clock a second a step: alice is
// mentioned (m1), claims task A and answers in a run that acks m1 (m2),
// the user mentions bob (m3) and task B is created, alice completes A,
// and the user speaks again (m4).
type forkFixture struct {
	db             *DB
	m1, m2, m3, m4 Message
	a, b           Task
}

func newForkFixture(t *testing.T) forkFixture {
	t.Helper()
	db, clk := teamDB(t, "alice", "bob")
	step := func(i int) { clk.Set(propT0.Add(time.Duration(i) * time.Second)) }
	var f forkFixture
	f.db = db
	f.m1 = send(t, db, NewMessage{Workflow: "wf", Tag: "main", Sender: "user", Content: "@alice plan it", Recipients: []string{"alice"}})
	step(1)
	f.a = mustCreate(t, db, task("plan", nil))
	step(2)
	mustClaim(t, db, actor("alice", ""), f.a.ID)
	if _, err := db.StartRun(t.Context(), Run{ID: "run-1", Agent: AgentKey{Workflow: "wf", Tag: "main", Name: "alice"}, Backend: "mock", Attempt: 1, InboxUntilSeq: f.m1.Seq}); err != nil {
		t.Fatal(err)
	}
	step(3)
	reply := NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "working on " + f.a.ID + " @bob", Recipients: []string{"bob"}}
	if _, err := db.SettleRun(t.Context(), Settlement{RunID: "run-1", Usage: []byte(`{}`), Reply: &reply, SinceSeq: f.m1.Seq}); err != nil {
		t.Fatal(err)
	}
	for _, m := range readChannel(t, db, wfMain, ReadOptions{}) {
		if m.Sender == "alice" {
			f.m2 = m
		}
	}
	step(4)
	f.m3 = send(t, db, NewMessage{Workflow: "wf", Tag: "main", Sender: "user", Content: "@bob next", Recipients: []string{"bob"}})
	f.b = mustCreate(t, db, task("build", func(nt *NewTask) { nt.DependsOn = []string{f.a.ID} }))
	step(5)
	if _, _, err := completeTask(db, t.Context(), actor("alice", ""), f.a.ID, "the plan"); err != nil {
		t.Fatal(err)
	}
	step(6)
	f.m4 = send(t, db, NewMessage{Workflow: "wf", Tag: "main", Sender: "user", Content: "thanks", Recipients: nil})
	return f
}

// forkInto makes wf:<tag> with alice and bob, as the workflow manager
// does before it seeds a fork.
func (f forkFixture) forkInto(t *testing.T, tag string) Scope {
	t.Helper()
	to := Scope{Workflow: "wf", Tag: tag}
	if _, err := f.db.CreateWorkflow(t.Context(), Workflow{Name: "wf", Tag: tag}); err != nil {
		t.Fatal(err)
	}
	addMembers(t, f.db, to, "alice", "bob")
	return to
}

// A fork at a seq has the channel up to it, the board and the read
// positions as they were when that message was posted.
func TestSeedFork(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	ctx := t.Context()

	type boardRow struct {
		Title  string
		State  contract.TaskState
		Result string
		Deps   int
	}
	source := readChannel(t, f.db, wfMain, ReadOptions{SinceSeq: 0, Limit: 100})
	upTo := func(seq int64) (out []string) {
		for _, m := range source {
			if m.Seq <= seq {
				out = append(out, taskRef.ReplaceAllString(m.Content, "task-X"))
			}
		}
		return out
	}
	tests := map[string]struct {
		at    Message
		board []boardRow
		alice bool // alice's m1 is read in the fork
	}{
		"at the first message": {at: f.m1},
		"at alice's reply: A is held then, so pending in the fork": {at: f.m2,
			board: []boardRow{{Title: "plan", State: contract.TaskPending}}, alice: true},
		"at m3: B exists, A not completed yet": {at: f.m3,
			board: []boardRow{{Title: "plan", State: contract.TaskPending}, {Title: "build", State: contract.TaskPending, Deps: 1}}, alice: true},
		"at the last message: A completed": {at: f.m4,
			board: []boardRow{{Title: "plan", State: contract.TaskCompleted, Result: "the plan"}, {Title: "build", State: contract.TaskPending, Deps: 1}}, alice: true},
	}
	i := 0
	for name, tc := range tests {
		i++
		to := f.forkInto(t, "fork"+string(rune('a'+i)))
		seed, err := f.db.SeedFork(ctx, wfMain, to, tc.at.Seq)
		if err != nil {
			t.Fatalf("%s: SeedFork: %v", name, err)
		}
		got := readChannel(t, f.db, to, ReadOptions{SinceSeq: 0, Limit: 100})
		var contents []string
		for _, m := range got {
			contents = append(contents, taskRef.ReplaceAllString(m.Content, "task-X"))
		}
		want := upTo(tc.at.Seq)
		if diff := cmp.Diff(want, contents); diff != "" {
			t.Errorf("%s: fork channel (-want +got):\n%s", name, diff)
		}
		if seed.Messages != len(want) || len(seed.Seqs) != len(want) {
			t.Errorf("%s: seed says %d messages, %d seqs; want %d", name, seed.Messages, len(seed.Seqs), len(want))
		}
		for _, m := range got {
			if m.Sender == "alice" && !strings.Contains(m.Content, "working on "+seed.Tasks[f.a.ID]+" ") {
				t.Errorf("%s: alice's reply %q does not name the fork's task %s", name, m.Content, seed.Tasks[f.a.ID])
			}
		}
		ts, err := f.db.ListTasks(ctx, to, TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var board []boardRow
		for _, tk := range ts {
			board = append(board, boardRow{Title: tk.Title, State: tk.State, Result: tk.Result, Deps: len(tk.DependsOn)})
			if tk.Holder != "" && !tk.State.Done() {
				t.Errorf("%s: task %s is %s with holder %s in the fork", name, tk.ID, tk.State, tk.Holder)
			}
		}
		if diff := cmp.Diff(tc.board, board); diff != "" {
			t.Errorf("%s: fork board (-want +got):\n%s", name, diff)
		}
		inbox, err := f.db.Inbox(ctx, AgentKey{Workflow: "wf", Tag: to.Tag, Name: "alice"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if unread := len(inbox) == 1; unread == tc.alice {
			t.Errorf("%s: alice's inbox in the fork has %d unread; want m1 read=%v", name, len(inbox), tc.alice)
		}
		// The source is untouched.
		if n := len(readChannel(t, f.db, wfMain, ReadOptions{SinceSeq: 0, Limit: 100})); n != len(source) {
			t.Errorf("%s: source channel has %d messages after the fork; want %d", name, n, len(source))
		}
	}
}

// A seq outside the source's channel, or a fork into a scope that has
// messages, is refused and writes nothing.
func TestSeedForkRefusals(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	ctx := t.Context()
	to := f.forkInto(t, "fork")
	tests := map[string]struct {
		seq  int64
		code contract.Code
		want string
	}{
		"beyond the channel": {seq: f.m4.Seq + 100, code: contract.CodeInvalid, want: "is not a message of @wf:main"},
		"zero":               {seq: 0, code: contract.CodeInvalid, want: "is not a message of @wf:main"},
	}
	for name, tc := range tests {
		_, err := f.db.SeedFork(ctx, wfMain, to, tc.seq)
		if contract.ErrorCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: SeedFork = %v; want %s containing %q", name, err, tc.code, tc.want)
		}
		if _, err := f.db.GetForkPoint(ctx, wfMain, tc.seq); contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: GetForkPoint = %v; want %s", name, err, tc.code)
		}
	}
	if n := queryInt(t, f.db, `SELECT count(*) FROM messages WHERE workflow = 'wf' AND tag = 'fork'`); n != 0 {
		t.Errorf("refused forks wrote %d messages", n)
	}
	if n := queryInt(t, f.db, `SELECT count(*) FROM tasks WHERE workflow = 'wf' AND tag = 'fork'`); n != 0 {
		t.Errorf("refused forks wrote %d tasks", n)
	}
	if _, err := f.db.SeedFork(ctx, wfMain, to, f.m2.Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.SeedFork(ctx, wfMain, to, f.m2.Seq); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("second seed of one fork = %v; want conflict", err)
	}
}
