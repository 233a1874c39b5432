package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A bounded delivery hands over the newest messages, counts the older ones
// and marks them all read, so the next delivery has only what came after.
func TestDeliverInbox(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice", "bob")
	bob := AgentKey{"bob", "team", "t"}
	post := func(content string) int64 {
		return send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: content, Recipients: []string{"bob"}}).Seq
	}
	var seqs []int64
	for _, c := range []string{"@bob 1", "@bob 2", "@bob 3", "@bob 4"} {
		seqs = append(seqs, post(c))
	}
	send(t, db, NewMessage{Workflow: "team", Tag: "t", Sender: "alice", Content: "not for bob"})

	ms, omitted, err := db.DeliverInbox(ctx, bob, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seqs[1:], seqsOf(ms)); diff != "" || omitted != 1 {
		t.Errorf("first delivery: omitted %d, seqs (-want +got):\n%s", omitted, diff)
	}
	if got := inboxSeqs(t, db, bob); len(got) != 0 {
		t.Errorf("after the delivery bob's inbox still holds %v", got)
	}
	if ms, omitted, err = db.DeliverInbox(ctx, bob, 3); err != nil || len(ms) != 0 || omitted != 0 {
		t.Errorf("second delivery with nothing new = %v, %d, %v", seqsOf(ms), omitted, err)
	}
	late := post("@bob 5")
	if ms, omitted, err = db.DeliverInbox(ctx, bob, 3); err != nil || !cmp.Equal(seqsOf(ms), []int64{late}) || omitted != 0 {
		t.Errorf("delivery of the late message = %v, %d, %v", seqsOf(ms), omitted, err)
	}
	if _, _, err := db.DeliverInbox(ctx, AgentKey{"ghost", "team", "t"}, 3); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("delivery to an unknown agent: %v, want not found", err)
	}
}

// The first hook of a session attaches it, later ones move its heartbeat,
// a new session takes the agent over, and only the attached session
// detaches it.
func TestAttachedSessions(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000).UTC()
	db := openAt(t, testPath(t), Options{PoolSize: 4, Now: func() time.Time { return now }})
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "bob")
	bob := AgentKey{"bob", "team", "t"}

	s, err := db.HeartbeatSession(ctx, bob, "s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	want := Session{Agent: bob, ID: "s1", Cwd: "/work", AttachedAt: now, HeartbeatAt: now}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("attached (-want +got):\n%s", diff)
	}
	now = now.Add(time.Minute)
	if s, _ = db.HeartbeatSession(ctx, bob, "s1", "/work"); !s.AttachedAt.Equal(want.AttachedAt) || !s.HeartbeatAt.Equal(now) {
		t.Errorf("heartbeat = %+v: want the attach time kept and the heartbeat moved", s)
	}
	if ok, err := db.DetachSession(ctx, bob, "other"); ok || err != nil {
		t.Errorf("a session that is not attached detached: %v, %v", ok, err)
	}
	now = now.Add(time.Minute)
	if s, _ = db.HeartbeatSession(ctx, bob, "s2", "/elsewhere"); s.ID != "s2" || !s.AttachedAt.Equal(now) {
		t.Errorf("a new session = %+v: want it attached now", s)
	}
	all, err := db.Sessions(ctx)
	if err != nil || len(all) != 1 || all[bob].ID != "s2" {
		t.Errorf("Sessions = %+v, %v", all, err)
	}
	if ok, err := db.DetachSession(ctx, bob, "s2"); !ok || err != nil {
		t.Errorf("detach: %v, %v", ok, err)
	}
	if all, _ := db.Sessions(ctx); len(all) != 0 {
		t.Errorf("after the detach: %+v", all)
	}
	if _, err := db.HeartbeatSession(ctx, AgentKey{"ghost", "team", "t"}, "s3", ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("a session of an unknown agent: %v, want not found", err)
	}
}
