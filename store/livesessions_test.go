package store

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A session is a chain of context windows: a new session of the same
// agent continues the newest when asked to; hooks count heartbeats,
// context and loaded files; a PreCompact payload is taken once, by the
// session's own restart or by the session that continues it; the
// transcript lands in the session's pseudo-run; ending ends the run, and
// a resumed session opens again with a new one.
func TestLiveSessionChain(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "bob", "carol")
	bob := AgentKey{"bob", "team", "t"}

	s1, created, err := db.OpenLiveSession(ctx, bob, SessionOpening{ID: "s1", Cwd: "/p", Chain: true})
	if err != nil || !created || s1.Prev != "" || s1.RunID == "" {
		t.Fatalf("first session = %+v, created %v, %v; want a new row with a run and no predecessor", s1, created, err)
	}
	if _, err := db.BeatLiveSession(ctx, bob, "s1", SessionBeat{ContextTokens: 1200, Loaded: []string{"/p/a.go"}}); err != nil {
		t.Fatal(err)
	}
	s, err := db.BeatLiveSession(ctx, bob, "s1", SessionBeat{Loaded: []string{"/p/a.go", "/p/b.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Heartbeats != 2 || s.ContextTokens != 1200 || !cmp.Equal(s.Loaded, []string{"/p/a.go", "/p/b.go"}) {
		t.Errorf("after two hooks s1 = %d heartbeats, %d tokens, loaded %v; want 2, 1200 (kept), both files once", s.Heartbeats, s.ContextTokens, s.Loaded)
	}
	if _, err := db.BeatLiveSession(ctx, bob, "s1", SessionBeat{Loaded: []string{"relative.go"}}); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("a relative loaded file: %v, want invalid", err)
	}
	if _, _, ok, err := db.TakeDehydration(ctx, "s1"); ok || err != nil {
		t.Errorf("a payload before any PreCompact: %v, %v", ok, err)
	}

	err = db.AppendLiveSessionEvents(ctx, "s1", []RunEvent{{Kind: RunEventUserPrompt, Data: `{"text":"PROMPT-MARK fix it"}`}, {Kind: "tool_call", Data: `{}`}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendLiveSessionEvents(ctx, "s1", []RunEvent{{Kind: "tool_result", Data: `{"Result":"ok"}`}}); err != nil {
		t.Fatal(err)
	}
	run, events, err := db.GetRun(ctx, s1.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, e := range events {
		if e.N != i+1 {
			t.Errorf("event %d is numbered %d", i+1, e.N)
		}
		kinds = append(kinds, e.Kind)
	}
	if run.Agent != bob || run.State != contract.RunRunning || !cmp.Equal(kinds, []string{RunEventUserPrompt, "tool_call", "tool_result"}) {
		t.Errorf("the session's run = %s %s, events %v", run.Agent, run.State, kinds)
	}
	hits, err := db.Search(ctx, Scope{"team", "t"}, SearchOptions{Query: "PROMPT-MARK"})
	if err != nil || len(hits) != 1 {
		t.Errorf("search for the prompt = %+v, %v; want the session's run", hits, err)
	}

	if err := db.DehydrateLiveSession(ctx, "s1", "PAYLOAD "+strings.Repeat("x", MaxDehydration)); err != nil {
		t.Fatal(err)
	}
	if ended, err := db.EndLiveSession(ctx, "s1"); !ended || err != nil {
		t.Fatalf("end s1 = %v, %v", ended, err)
	}
	if run, _, _ := db.GetRun(ctx, s1.RunID); run.State != contract.RunSucceeded {
		t.Errorf("the ended session's run is %s", run.State)
	}

	// A new session of bob continues s1 and takes its payload, once.
	s2, created, err := db.OpenLiveSession(ctx, bob, SessionOpening{ID: "s2", Chain: true, EffortID: "effort-1"})
	if err != nil || !created || s2.Prev != "s1" || s2.EffortID != "effort-1" {
		t.Fatalf("second session = %+v, created %v, %v; want it to continue s1", s2, created, err)
	}
	payload, from, ok, err := db.TakeDehydration(ctx, "s2")
	if err != nil || !ok || from != "s1" || !strings.HasPrefix(payload, "PAYLOAD ") || len(payload) != MaxDehydration {
		t.Errorf("s2's payload = %d bytes from %q, %v, %v; want s1's, cut to %d", len(payload), from, ok, err, MaxDehydration)
	}
	if _, _, ok, _ := db.TakeDehydration(ctx, "s2"); ok {
		t.Error("the payload was given twice")
	}

	// s1 resumed keeps its id and row, open again with a new run; its own
	// new payload goes to its own restart.
	r1, created, err := db.OpenLiveSession(ctx, bob, SessionOpening{ID: "s1", Chain: true})
	if err != nil || created || !r1.EndedAt.IsZero() || r1.RunID == s1.RunID || r1.Prev != "" {
		t.Errorf("s1 resumed = %+v, created %v, %v; want the same row open with a new run", r1, created, err)
	}
	if err := db.DehydrateLiveSession(ctx, "s1", "AGAIN"); err != nil {
		t.Fatal(err)
	}
	if payload, from, ok, _ := db.TakeDehydration(ctx, "s1"); !ok || from != "s1" || payload != "AGAIN" {
		t.Errorf("s1's own restart took %q from %q (%v)", payload, from, ok)
	}

	// Unchained, another agent's and the listing.
	if s3, _, err := db.OpenLiveSession(ctx, bob, SessionOpening{ID: "s3"}); err != nil || s3.Prev != "" {
		t.Errorf("an unchained session = %+v, %v", s3, err)
	}
	if _, _, err := db.OpenLiveSession(ctx, AgentKey{"carol", "team", "t"}, SessionOpening{ID: "s2"}); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("bob's session as carol: %v, want conflict", err)
	}
	all, err := db.LiveSessions(ctx, &bob)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID+"<"+s.Prev)
	}
	if diff := cmp.Diff([]string{"s1<", "s2<s1", "s3<"}, ids); diff != "" {
		t.Errorf("bob's chain (-want +got):\n%s", diff)
	}
}

// A daemon's restart fails the runs it left behind, never the pseudo-run
// of a session that goes on in its own program; an ended session's is
// failed like any.
func TestRestartKeepsOpenSessionsRunning(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	k := AgentKey{Workflow: "team", Tag: "main", Name: "bob"}
	createTeam(t, db, k.Scope(), k.Name)
	open, _, err := db.OpenLiveSession(ctx, k, SessionOpening{ID: "open", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	ended, _, err := db.OpenLiveSession(ctx, k, SessionOpening{ID: "ended", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	// Ended in a way that left its run recorded as running.
	if err := db.write(ctx, func(conn querier) error {
		return conn.execute(`UPDATE live_sessions SET ended_at = 1 WHERE session_id = 'ended'`, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.FailRunningRuns(ctx, "daemon stopped during the run"); err != nil || n != 1 {
		t.Errorf("FailRunningRuns = %d, %v; want 1 (the ended session's)", n, err)
	}
	if r, _, err := db.GetRun(ctx, open.RunID); err != nil || r.State != contract.RunRunning {
		t.Errorf("the open session's run after a restart = %+v, %v; want running", r, err)
	}
	if r, _, err := db.GetRun(ctx, ended.RunID); err != nil || r.State != contract.RunFailed {
		t.Errorf("the ended session's run = %+v, %v; want failed", r, err)
	}
}
