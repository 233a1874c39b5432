package store

import (
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// A queue in order: ids mq-N, one pending request per branch, batches
// taken in order and only while nothing is being checked, landing
// recorded before landed, requeue keeps places, dequeue only before
// landing, and check logs kept for every entry of their batch.
func TestMergeQueueLifecycle(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	scope := Scope{"team", "t"}
	createTeam(t, db, scope, "alice", "bob", "carol")
	q := QueueKey{Workflow: "team", Tag: "t", Base: "main"}
	enqueue := func(agent string) QueueEntry {
		t.Helper()
		e, _, err := db.Enqueue(ctx, QueueEntry{Workflow: "team", Tag: "t", Base: "main", Agent: agent, Branch: "aw/team/t/" + agent, By: "lead", Head: "h-" + agent})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := enqueue("alice"), enqueue("bob")
	c, ahead, err := db.Enqueue(ctx, QueueEntry{Workflow: "team", Tag: "t", Base: "main", Agent: "carol", Branch: "aw/team/t/carol", By: "user"})
	if err != nil || ahead != 2 || c.State != tools.QueueQueued || !strings.HasPrefix(c.ID, "mq-") || c.Seq <= b.Seq || b.Seq <= a.Seq {
		t.Fatalf("third entry %+v, %d ahead, %v", c, ahead, err)
	}
	if _, _, err := db.Enqueue(ctx, QueueEntry{Workflow: "team", Tag: "t", Base: "main", Agent: "alice", Branch: "aw/team/t/alice", By: "user"}); contract.ErrorCode(err) != contract.CodeConflict ||
		!strings.Contains(err.Error(), "as "+a.ID+" (queued)") {
		t.Errorf("a second request for alice's branch: %v, want a conflict naming %s", err, a.ID)
	}
	if n, err := db.PendingQueueCount(ctx, scope); err != nil || n != 3 {
		t.Errorf("pending = %d, %v", n, err)
	}
	if qs, err := db.PendingQueues(ctx); err != nil || len(qs) != 1 || qs[0] != q {
		t.Errorf("pending queues = %+v, %v", qs, err)
	}

	batch, err := db.TakeBatch(ctx, q, 2)
	if err != nil || len(batch) != 2 || batch[0].ID != a.ID || batch[1].ID != b.ID || batch[0].State != tools.QueueChecking || batch[0].Attempts != 1 {
		t.Fatalf("batch = %+v, %v", batch, err)
	}
	if more, err := db.TakeBatch(ctx, q, 2); err != nil || len(more) != 0 {
		t.Errorf("a batch while one is checking = %+v, %v; want none", more, err)
	}
	if err := db.AddQueueCheck(ctx, QueueCheck{Batch: []string{a.ID, b.ID}, Command: "sh check.sh", ExitCode: 1, DurationMS: 12, Output: "forbidden\n"}); err != nil {
		t.Fatal(err)
	}
	// Bisected: alice lands, bob is the culprit.
	moved, err := db.MarkLanding(ctx, "base0", []string{a.ID}, []string{"m1"})
	if err != nil || moved != 1 {
		t.Fatalf("landing = %v, %v", moved, err)
	}
	if got, err := db.EntriesIn(ctx, tools.QueueLanding); err != nil || len(got) != 1 || got[0].BaseCommit != "base0" || got[0].Commit != "m1" {
		t.Errorf("landing entries = %+v, %v", got, err)
	}
	line := &NewMessage{Workflow: "team", Tag: "t", Sender: "system", Kind: KindSystem, Content: "@alice landed", Recipients: []string{"alice"}}
	e, msg, ok, err := db.FinishQueueEntry(ctx, a.ID, QueueOutcome{State: tools.QueueLanded, Line: line}, tools.QueueLanding)
	if err != nil || !ok || e.State != tools.QueueLanded || e.Commit != "m1" || e.EndedAt.IsZero() || msg == nil || msg.Content != "@alice landed" {
		t.Errorf("landed = %+v, %+v, %v, %v", e, msg, ok, err)
	}
	if _, msg, ok, err := db.FinishQueueEntry(ctx, a.ID, QueueOutcome{State: tools.QueueFailed, Line: line}, tools.QueueChecking); err != nil || ok || msg != nil {
		t.Errorf("failing a landed entry: changed %v, posted %+v, %v", ok, msg, err)
	}
	if n := queryInt(t, db, `SELECT COUNT(*) FROM messages WHERE content = '@alice landed'`); n != 1 {
		t.Errorf("the landed line was posted %d times, want once", n)
	}
	e, _, ok, err = db.FinishQueueEntry(ctx, b.ID, QueueOutcome{State: tools.QueueFailed, Command: "sh check.sh", Output: "forbidden\n", Reason: "checks failed"}, tools.QueueChecking)
	if err != nil || !ok || e.Command != "sh check.sh" || e.Files == nil {
		t.Errorf("failed = %+v, %v, %v", e, ok, err)
	}
	got, checks, err := db.GetQueueEntry(ctx, b.ID)
	if err != nil || got.State != tools.QueueFailed || len(checks) != 1 || checks[0].Output != "forbidden\n" || len(checks[0].Batch) != 2 || checks[0].ExitCode != 1 {
		t.Errorf("show %s = %+v, %+v, %v", b.ID, got, checks, err)
	}
	if _, _, err := db.GetQueueEntry(ctx, "mq-999"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("unknown entry: %v", err)
	}

	// carol: taken, put back in line (a restart), then removed.
	if batch, err := db.TakeBatch(ctx, q, 4); err != nil || len(batch) != 1 || batch[0].ID != c.ID {
		t.Fatalf("next batch = %+v, %v", batch, err)
	}
	if err := db.Requeue(ctx, []string{c.ID}, tools.QueueChecking); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Dequeue(ctx, a.ID, "user", "", nil); contract.ErrorCode(err) != contract.CodeConflict || !strings.Contains(err.Error(), "is landed") {
		t.Errorf("dequeue of a landed entry: %v", err)
	}
	if e, _, err := db.Dequeue(ctx, c.ID, "user", "not now", nil); err != nil || e.State != tools.QueueRemoved || e.Reason != "removed by user: not now" {
		t.Errorf("dequeue = %+v, %v", e, err)
	}
	if n, err := db.PendingQueueCount(ctx, scope); err != nil || n != 0 {
		t.Errorf("pending after all = %d, %v", n, err)
	}
	all, err := db.ListQueue(ctx, QueueFilter{Scope: &scope, All: true})
	if err != nil || len(all) != 3 || all[0].ID != c.ID {
		t.Errorf("all, newest first = %+v, %v", all, err)
	}
	if pending, err := db.ListQueue(ctx, QueueFilter{Scope: &scope}); err != nil || len(pending) != 0 {
		t.Errorf("pending list = %+v, %v", pending, err)
	}
}

// Each repository of a workspace has its own queue: the same branch name
// in another repository is another entry, taken in a batch of its own.
func TestMergeQueuePerRepository(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice")
	own, err1 := enqueueIn(db, t, "")
	lib, err2 := enqueueIn(db, t, "lib")
	if err1 != nil || err2 != nil || lib.Repo != "lib" || own.Repo != "" {
		t.Fatalf("the same branch in two repositories: %+v %v, %+v %v", own, err1, lib, err2)
	}
	if _, err := enqueueIn(db, t, "lib"); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("the branch again in lib's queue: %v, want a conflict", err)
	}
	qs, err := db.PendingQueues(ctx)
	if err != nil || len(qs) != 2 || qs[0].Repo != "" || qs[1].Repo != "lib" {
		t.Fatalf("pending queues = %+v, %v", qs, err)
	}
	batch, err := db.TakeBatch(ctx, qs[1], 4)
	if err != nil || len(batch) != 1 || batch[0].ID != lib.ID {
		t.Fatalf("lib's batch = %+v, %v", batch, err)
	}
	if got, err := db.ListQueue(ctx, QueueFilter{Queue: &qs[0]}); err != nil || len(got) != 1 || got[0].ID != own.ID {
		t.Errorf("the workflow's own queue = %+v, %v", got, err)
	}
}

func enqueueIn(db *DB, t *testing.T, repo string) (QueueEntry, error) {
	e, _, err := db.Enqueue(t.Context(), QueueEntry{Workflow: "team", Tag: "t", Repo: repo, Base: "main", Agent: "alice", Branch: "aw/team/t/alice", By: "alice"})
	return e, err
}
