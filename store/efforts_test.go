package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// implementPhases are the phases of the example skill the tests walk.
var implementPhases = []string{"plan", "test-first", "implement", "verify"}

// newEffort is alice@wf:main starting implement on /work/app; tests
// change what they test.
func newEffort(change func(*NewEffort)) NewEffort {
	ne := NewEffort{
		Agent: AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}, Dir: "/work/app", Skill: "implement",
		Snapshot: json.RawMessage(`{"name":"implement","phases":[{"name":"plan"}]}`), Phases: implementPhases,
		Mode: "solo", Nonce: "n0", Run: "run_1",
	}
	if change != nil {
		change(&ne)
	}
	return ne
}

func mustStart(t *testing.T, db *DB, ne NewEffort) (Effort, []Debrief) {
	t.Helper()
	e, prev, err := db.StartEffort(t.Context(), ne)
	if err != nil {
		t.Fatalf("StartEffort %s on %s: %v", ne.Agent, ne.Dir, err)
	}
	return e, prev
}

func mustAdvance(t *testing.T, db *DB, a Advance) Effort {
	t.Helper()
	e, err := db.AdvanceEffort(t.Context(), a)
	if err != nil {
		t.Fatalf("AdvanceEffort %+v: %v", a, err)
	}
	return e
}

// walkTo advances e from its current phase to phase to, nonce n<phase>.
func walkTo(t *testing.T, db *DB, e Effort, to int) Effort {
	t.Helper()
	for e.Phase < to {
		e = mustAdvance(t, db, Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: fmt.Sprintf("n%d", e.Phase+1),
			Notes: "done " + e.PhaseName})
	}
	return e
}

func wantCode(t *testing.T, what string, err error, code contract.Code, says string) {
	t.Helper()
	if contract.ErrorCode(err) != code || !strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("%s: %v; want %s saying %q", what, err, code, says)
	}
}

// A walk from start to finish: each phase change is a completed and an
// entered checkpoint, in order, with its proof, notes, evidence and the
// directories known then; the end clears the nonce.
func TestEffortWalkStartToFinish(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice")
	ctx := t.Context()
	e, prev := mustStart(t, db, newEffort(nil))
	want := Effort{
		ID: "effort-1", Agent: AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}, Dir: "/work/app", Ordinal: 1,
		Skill: "implement", Snapshot: newEffort(nil).Snapshot, Phases: implementPhases, Mode: "solo",
		State: contract.EffortActive, Phase: 0, PhaseName: "plan", Nonce: "n0",
		StartedAt: propT0, HeartbeatAt: propT0, Dirs: []string{}, Directives: []string{},
	}
	if diff := cmp.Diff(want, e); diff != "" || len(prev) != 0 {
		t.Errorf("started (-want +got):\n%s\nprevious: %+v", diff, prev)
	}

	clk.Set(propT0.Add(time.Minute))
	e = mustAdvance(t, db, Advance{ID: "1", From: 0, Nonce: "n0", NewNonce: "n1", Proof: json.RawMessage(`{"plan_summary":"small"}`),
		Notes: "planned", Evidence: json.RawMessage(`[]`), Dirs: []string{"/work/app/pkg/", "/work/app"}, Run: "run_1"})
	if e.Phase != 1 || e.PhaseName != "test-first" || e.Nonce != "n1" || !cmp.Equal(e.Dirs, []string{"/work/app/pkg", "/work/app"}) ||
		!e.HeartbeatAt.Equal(propT0.Add(time.Minute)) {
		t.Errorf("advanced = %+v", e)
	}
	e = walkTo(t, db, e, 3)
	if _, err := db.AdvanceEffort(ctx, Advance{ID: e.ID, From: 3, Nonce: "n3", NewNonce: "n4"}); err == nil {
		t.Error("advanced past the last phase")
	}
	clk.Set(propT0.Add(time.Hour))
	e, err := db.FinishEffort(ctx, Finish{ID: e.ID, Nonce: "n3", Proof: json.RawMessage(`{"green":true}`), Notes: "debrief: all green",
		Evidence: json.RawMessage(`[{"shell":"go test ./...","exit":0}]`), Run: "run_2"})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != contract.EffortFinished || e.Nonce != "" || !e.EndedAt.Equal(propT0.Add(time.Hour)) || e.Phase != 3 {
		t.Errorf("finished = %+v", e)
	}

	hist, err := db.EffortHistory(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Phase int
		Kind  CheckpointKind
		Notes string
	}
	var got []step
	for i, c := range hist {
		if c.N != i+1 {
			t.Errorf("checkpoint %d has n %d", i+1, c.N)
		}
		got = append(got, step{c.Phase, c.Kind, c.Notes})
	}
	wantSteps := []step{
		{0, CheckpointEntered, ""}, {0, CheckpointCompleted, "planned"}, {1, CheckpointEntered, ""},
		{1, CheckpointCompleted, "done test-first"}, {2, CheckpointEntered, ""}, {2, CheckpointCompleted, "done implement"},
		{3, CheckpointEntered, ""}, {3, CheckpointFinished, "debrief: all green"},
	}
	if diff := cmp.Diff(wantSteps, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	first := hist[1]
	if string(first.Proof) != `{"plan_summary":"small"}` || first.PhaseName != "plan" || first.Run != "run_1" ||
		!cmp.Equal(first.Dirs, []string{"/work/app/pkg", "/work/app"}) || !first.At.Equal(propT0.Add(time.Minute)) {
		t.Errorf("plan's completed checkpoint = %+v", first)
	}
	if string(hist[0].Proof) != `{}` || string(hist[0].Evidence) != `[]` || len(hist[0].Dirs) != 0 || hist[0].Run != "run_1" {
		t.Errorf("the first entered checkpoint = %+v", hist[0])
	}
	if last := hist[len(hist)-1]; string(last.Evidence) != `[{"shell":"go test ./...","exit":0}]` || last.Run != "run_2" {
		t.Errorf("finished checkpoint = %+v", last)
	}
	if _, err := db.FinishEffort(ctx, Finish{ID: e.ID}); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("finish twice: %v", err)
	}

	// The directory's next effort is number 2 and hears effort 1's debrief.
	next, prev := mustStart(t, db, newEffort(func(ne *NewEffort) { ne.Skill = "review" }))
	if next.Ordinal != 2 || next.ID != "effort-2" {
		t.Errorf("second effort = %s #%d", next.ID, next.Ordinal)
	}
	wantPrev := []Debrief{{ID: "effort-1", Ordinal: 1, Skill: "implement", Notes: "debrief: all green", EndedAt: propT0.Add(time.Hour)}}
	if diff := cmp.Diff(wantPrev, prev); diff != "" {
		t.Errorf("debriefs (-want +got):\n%s", diff)
	}
}

// A refused advance or finish writes nothing: a replayed token, a stale
// phase, a finish before the last phase.
func TestEffortReplayedNonceWritesNothing(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	e = mustAdvance(t, db, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1", Notes: "planned"})
	before, _ := db.EffortHistory(ctx, e.ID)

	for what, a := range map[string]Advance{
		"the token of phase 1 again":    {ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n9", Notes: "replayed"},
		"an old nonce for phase 2":      {ID: e.ID, From: 1, Nonce: "n0", NewNonce: "n9", Notes: "replayed"},
		"a forged nonce":                {ID: e.ID, From: 1, Nonce: "forged", NewNonce: "n9"},
		"a skipped phase (from 2)":      {ID: e.ID, From: 2, Nonce: "n1", NewNonce: "n9"},
		"an unknown effort":             {ID: "effort-9", From: 1, Nonce: "n1", NewNonce: "n9"},
		"no nonce":                      {ID: e.ID, From: 1, NewNonce: "n9"},
		"a proof that is not an object": {ID: e.ID, From: 1, Nonce: "n1", NewNonce: "n9", Proof: json.RawMessage(`[1]`)},
	} {
		_, err := db.AdvanceEffort(ctx, a)
		if err == nil {
			t.Errorf("%s: advanced", what)
		}
	}
	_, err := db.AdvanceEffort(ctx, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n9"})
	wantCode(t, "replayed token", err, contract.CodeConflict, "it is in phase 2, test-first")
	_, err = db.AdvanceEffort(ctx, Advance{ID: e.ID, From: 1, Nonce: "n0", NewNonce: "n9"})
	wantCode(t, "old nonce", err, contract.CodeConflict, "already used")
	_, err = db.FinishEffort(ctx, Finish{ID: e.ID, Nonce: "n1", Notes: "too soon"})
	wantCode(t, "finish in phase 2", err, contract.CodeConflict, "finishing needs the last phase, verify")
	_, err = db.FinishEffort(ctx, Finish{ID: e.ID, Nonce: "n0", Abandon: true, Reason: "stale"})
	wantCode(t, "abandon with an old nonce", err, contract.CodeConflict, "already used")
	_, err = db.FinishEffort(ctx, Finish{ID: e.ID, Abandon: true})
	wantCode(t, "abandon without a reason", err, contract.CodeInvalid, "say why")

	after, err := db.EffortHistory(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("refusals wrote history (-before +after):\n%s", diff)
	}
	if got, _ := db.GetEffort(ctx, e.ID); got.Phase != 1 || got.Nonce != "n1" || got.State != contract.EffortActive {
		t.Errorf("effort after refusals = %+v", got)
	}

	// The user abandons without a token; the reason is kept, tokens die.
	e, err = db.FinishEffort(ctx, Finish{ID: e.ID, Abandon: true, Reason: "wrong skill", Notes: "half planned"})
	if err != nil || e.State != contract.EffortAbandoned || e.Reason != "wrong skill" || e.Nonce != "" {
		t.Fatalf("abandon = %+v, %v", e, err)
	}
	_, err = db.AdvanceEffort(ctx, Advance{ID: e.ID, From: 1, Nonce: "n1", NewNonce: "n2"})
	wantCode(t, "advance an abandoned effort", err, contract.CodeConflict, "it is abandoned")
	hist, _ := db.EffortHistory(ctx, e.ID)
	if last := hist[len(hist)-1]; last.Kind != CheckpointAbandoned || last.Phase != 1 || last.Notes != "half planned" {
		t.Errorf("abandoned checkpoint = %+v", last)
	}
	// An abandoned effort leaves no debrief.
	if _, prev := mustStart(t, db, newEffort(nil)); len(prev) != 0 {
		t.Errorf("debriefs after an abandoned effort: %+v", prev)
	}
}

// An agent has one active effort: a second start is refused naming the
// first, and the partial unique index refuses one written past the check.
func TestEffortSecondActiveRefused(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	_, _, err := db.StartEffort(ctx, newEffort(func(ne *NewEffort) { ne.Dir = "/elsewhere" }))
	wantCode(t, "second start", err, contract.CodeConflict, "alice@wf:main already has an active effort, effort-1 (implement, #1 of /work/app, phase plan)")
	if n := queryInt(t, db, `SELECT count(*) FROM efforts`); n != 1 {
		t.Errorf("%d efforts after a refused start", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM work_dirs`); n != 1 {
		t.Errorf("%d work dirs after a refused start", n)
	}
	err = db.write(ctx, func(conn querier) error {
		return conn.execute(`INSERT INTO efforts (id, n, workflow, tag, agent, dir, ordinal, skill, skill_json, phases_json,
			phase_name, started_at, heartbeat_at) VALUES ('effort-99', 99, 'wf', 'main', 'alice', '/work/app', 99, 's', '{}', '["p"]', 'p', 0, 0)`, nil)
	})
	wantCode(t, "a second active row by hand", err, contract.CodeConflict, "")

	// Another agent may start on the same directory; the first, once
	// finished, may start again.
	if b, _ := mustStart(t, db, newEffort(func(ne *NewEffort) { ne.Agent.Name = "bob" })); b.Ordinal != 2 {
		t.Errorf("bob's effort is #%d", b.Ordinal)
	}
	if _, err := db.FinishEffort(ctx, Finish{ID: e.ID, Abandon: true, Reason: "done elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := mustStart(t, db, newEffort(nil)); again.Ordinal != 3 {
		t.Errorf("alice's second effort is #%d", again.Ordinal)
	}
	got, found, err := db.ActiveEffort(ctx, AgentKey{Name: "alice", Workflow: "wf", Tag: "main"})
	if err != nil || !found || got.ID != "effort-3" {
		t.Errorf("alice's active effort = %s, %v, %v", got.ID, found, err)
	}
	if _, found, err := db.ActiveEffort(ctx, AgentKey{Name: "carol", Workflow: "wf", Tag: "main"}); found || err != nil {
		t.Errorf("carol's active effort: found %v, %v", found, err)
	}
}

// A directory numbers its efforts once, across workflows; another
// directory counts on its own; the path is cleaned first.
func TestEffortOrdinalsPerDir(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	addMembers(t, db, Scope{"other", "main"}, "carol")
	ctx := t.Context()
	type start struct {
		agent AgentKey
		dir   string
	}
	alice, bob := AgentKey{"alice", "wf", "main"}, AgentKey{"bob", "wf", "main"}
	carol := AgentKey{"carol", "other", "main"}
	var got []string
	for _, s := range []start{{alice, "/work/app"}, {bob, "/work/lib"}, {carol, "/work/app/"}, {alice, "/work/./lib"}} {
		if cur, found, _ := db.ActiveEffort(ctx, s.agent); found {
			if _, err := db.FinishEffort(ctx, Finish{ID: cur.ID, Abandon: true, Reason: "next"}); err != nil {
				t.Fatal(err)
			}
		}
		e, _ := mustStart(t, db, newEffort(func(ne *NewEffort) { ne.Agent, ne.Dir = s.agent, s.dir }))
		got = append(got, fmt.Sprintf("%s %s #%d", e.Agent.Workflow, e.Dir, e.Ordinal))
	}
	want := []string{"wf /work/app #1", "wf /work/lib #1", "other /work/app #2", "wf /work/lib #2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ordinals (-want +got):\n%s", diff)
	}

	for what, ne := range map[string]NewEffort{
		"relative dir":  newEffort(func(ne *NewEffort) { ne.Agent = bob; ne.Dir = "work/app" }),
		"no phases":     newEffort(func(ne *NewEffort) { ne.Agent = bob; ne.Phases = nil }),
		"no nonce":      newEffort(func(ne *NewEffort) { ne.Agent = bob; ne.Nonce = "" }),
		"bad snapshot":  newEffort(func(ne *NewEffort) { ne.Agent = bob; ne.Snapshot = json.RawMessage(`{`) }),
		"unknown agent": newEffort(func(ne *NewEffort) { ne.Agent.Name = "zed" }),
	} {
		if _, _, err := db.StartEffort(ctx, ne); err == nil {
			t.Errorf("%s: started", what)
		}
	}
	if n := queryInt(t, db, `SELECT last_ordinal FROM work_dirs WHERE dir = '/work/app'`); n != 2 {
		t.Errorf("refused starts moved /work/app's counter to %d", n)
	}

	// Listing: by directory, workflow, agent; only active unless All.
	list := func(f EffortFilter) []string {
		es, err := db.Efforts(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		return ids
	}
	for what, c := range map[string]struct {
		f    EffortFilter
		want []string
	}{
		"active":             {EffortFilter{}, []string{"effort-2", "effort-3", "effort-4"}},
		"all":                {EffortFilter{All: true}, []string{"effort-1", "effort-2", "effort-3", "effort-4"}},
		"dir, all":           {EffortFilter{Dir: "/work/app/", All: true}, []string{"effort-1", "effort-3"}},
		"workflow":           {EffortFilter{Workflow: "wf", Tag: "main"}, []string{"effort-2", "effort-4"}},
		"agent, all":         {EffortFilter{Workflow: "wf", Tag: "main", Agent: "alice", All: true}, []string{"effort-1", "effort-4"}},
		"nothing in the dir": {EffortFilter{Dir: "/nowhere", All: true}, nil},
	} {
		if diff := cmp.Diff(c.want, list(c.f)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
}

// Starts racing on one directory, through two handles on one database
// (two daemons of a cluster, on PostgreSQL), never share an ordinal.
func TestEffortConcurrentStartsGetDistinctOrdinals(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	a := openAt(t, path, Options{PoolSize: 4})
	b := openAt(t, path, Options{PoolSize: 4})
	const n = 8
	var agents []string
	for i := range n {
		agents = append(agents, fmt.Sprintf("a%d", i))
	}
	addMembers(t, a, wfMain, agents...)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ordinals []int
	)
	start := make(chan struct{})
	for i, name := range agents {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			e, _, err := db.StartEffort(t.Context(), newEffort(func(ne *NewEffort) { ne.Agent.Name = name }))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			ordinals = append(ordinals, e.Ordinal)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	want := []int{1, 2, 3, 4, 5, 6, 7, 8}
	if diff := cmp.Diff(want, ordinals, cmpopts.SortSlices(func(x, y int) bool { return x < y })); diff != "" {
		t.Errorf("ordinals (-want +got):\n%s", diff)
	}
}

// Observations are kept per phase: a phase's evidence never includes an
// earlier phase's, and one for a phase the effort is not in is refused.
func TestEffortObservationsByPhase(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	zero, one := 0, 1
	observe := func(phase int, kind ObservationKind, subject string, exit *int) error {
		_, err := db.Observe(ctx, e.ID, phase, kind, subject, exit, "run_1")
		return err
	}
	for _, err := range []error{
		observe(0, ObservedTool, "Read", nil),
		observe(0, ObservedShell, "go test ./...", &one),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, "a future phase", observe(1, ObservedFile, "main.go", nil), contract.CodeConflict, "it is in phase 1, plan")
	wantCode(t, "a file with an exit", observe(0, ObservedFile, "main.go", &one), contract.CodeInvalid, "only a shell")
	wantCode(t, "unknown kind", observe(0, "dream", "x", nil), contract.CodeInvalid, "unknown kind")
	e = mustAdvance(t, db, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1"})
	if err := observe(1, ObservedShell, "go test ./...", &zero); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a past phase", observe(0, ObservedTool, "Read", nil), contract.CodeConflict, "it is in phase 2")

	got0, err := db.Observations(ctx, e.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want0 := []Observation{
		{Phase: 0, N: 1, Kind: ObservedTool, Subject: "Read", Run: "run_1", At: propT0},
		{Phase: 0, N: 2, Kind: ObservedShell, Subject: "go test ./...", Exit: &one, Run: "run_1", At: propT0},
	}
	if diff := cmp.Diff(want0, got0); diff != "" {
		t.Errorf("phase 1's observations (-want +got):\n%s", diff)
	}
	got1, _ := db.Observations(ctx, e.ID, 1)
	if len(got1) != 1 || got1[0].N != 1 || *got1[0].Exit != 0 {
		t.Errorf("phase 2's observations = %+v", got1)
	}
	if _, err := db.Observations(ctx, "effort-9", 0); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("observations of an unknown effort: %v", err)
	}
}

// A directive is brought in once: AddEffortDirectives says which are new.
// Directories too; heartbeats and context use are kept.
func TestEffortDirectivesOnce(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	add := func(paths ...string) []string {
		t.Helper()
		fresh, err := db.AddEffortDirectives(ctx, e.ID, paths...)
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	if got := add("/work/app/AGENTS.md", "/work/AGENTS.md"); !cmp.Equal(got, []string{"/work/app/AGENTS.md", "/work/AGENTS.md"}) {
		t.Errorf("first = %v", got)
	}
	if got := add("/work/app/AGENTS.md", "/work/app/pkg/INVARIANTS.md", "/work/app/pkg/INVARIANTS.md"); !cmp.Equal(got, []string{"/work/app/pkg/INVARIANTS.md"}) {
		t.Errorf("second = %v", got)
	}
	if got := add("/work/AGENTS.md"); len(got) != 0 {
		t.Errorf("third = %v", got)
	}
	if _, err := db.AddEffortDirectives(ctx, e.ID, "AGENTS.md"); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("a relative directive: %v", err)
	}
	if fresh, err := db.AddEffortDirs(ctx, e.ID, "/work/app/pkg", "/work/app/pkg/"); err != nil || !cmp.Equal(fresh, []string{"/work/app/pkg"}) {
		t.Errorf("dirs = %v, %v", fresh, err)
	}
	clk.Set(propT0.Add(time.Minute))
	if err := db.HeartbeatEffort(ctx, e.ID, time.Time{}, &ContextUse{Tokens: 50_000, Window: 200_000}); err != nil {
		t.Fatal(err)
	}
	if err := db.HeartbeatEffort(ctx, e.ID, propT0.Add(time.Second), nil); err != nil { // late: never moves it back
		t.Fatal(err)
	}
	got, _ := db.GetEffort(ctx, e.ID)
	want := []string{"/work/app/AGENTS.md", "/work/AGENTS.md", "/work/app/pkg/INVARIANTS.md"}
	if !cmp.Equal(got.Directives, want) || !cmp.Equal(got.Dirs, []string{"/work/app/pkg"}) ||
		!got.HeartbeatAt.Equal(propT0.Add(time.Minute)) || !cmp.Equal(got.Context, &ContextUse{50_000, 200_000}) {
		t.Errorf("effort = %+v", got)
	}
	if _, err := db.FinishEffort(ctx, Finish{ID: e.ID, Abandon: true, Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddEffortDirectives(ctx, e.ID, "/x/AGENTS.md"); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("a directive for an ended effort: %v", err)
	}
	if err := db.HeartbeatEffort(ctx, e.ID, time.Time{}, nil); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("a heartbeat of an ended effort: %v", err)
	}
}

// Everything survives closing and opening the store again, and a resumed
// run finds the phase, the notes so far and the directories.
func TestEffortSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	db, err := Open(t.Context(), path, Options{Now: func() time.Time { return propT0 }})
	if err != nil {
		t.Fatal(err)
	}
	addMembers(t, db, wfMain, "alice", "bob")
	e, _, err := db.StartEffort(t.Context(), newEffort(nil))
	if err != nil {
		t.Fatal(err)
	}
	e = walkTo(t, db, e, 2)
	if _, err := db.AddEffortDirectives(t.Context(), e.ID, "/work/app/AGENTS.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Observe(t.Context(), e.ID, 2, ObservedFile, "main.go", nil, "run_1"); err != nil {
		t.Fatal(err)
	}
	hist, _ := db.EffortHistory(t.Context(), e.ID)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openAt(t, path, Options{})
	ctx := t.Context()
	got, err := db.GetEffort(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != 2 || got.Nonce != "n2" || !cmp.Equal(got.Directives, []string{"/work/app/AGENTS.md"}) {
		t.Errorf("reopened effort = %+v", got)
	}
	hist2, err := db.EffortHistory(ctx, e.ID)
	if diff := cmp.Diff(hist, hist2); err != nil || diff != "" {
		t.Errorf("reopened history (-before +after): %v\n%s", err, diff)
	}
	if obs, err := db.Observations(ctx, e.ID, 2); err != nil || len(obs) != 1 || obs[0].Subject != "main.go" {
		t.Errorf("reopened observations = %+v, %v", obs, err)
	}
	r, err := db.ResumeEffort(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Last.Kind != CheckpointEntered || r.Last.PhaseName != "implement" || len(r.Notes) != 2 ||
		r.Notes[0].Notes != "done plan" || r.Notes[1].Notes != "done test-first" {
		t.Errorf("resume = last %+v, notes %+v", r.Last, r.Notes)
	}
	// The counters go on where they were.
	if next, _ := mustStart(t, db, newEffort(func(ne *NewEffort) { ne.Agent.Name = "bob" })); next.ID != "effort-2" || next.Ordinal != 2 {
		t.Errorf("next after reopening = %s #%d", next.ID, next.Ordinal)
	}
}

// Removing the agent or its workflow keeps its efforts: an active one
// stays active, without an agent, with its history.
func TestEffortOutlivesItsAgent(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	mustAdvance(t, db, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1"})
	if err := db.DeleteAgent(ctx, e.Agent); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteWorkflow(ctx, "wf", "main"); err != nil {
		t.Fatal(err)
	}
	es, err := db.Efforts(ctx, EffortFilter{Dir: "/work/app"})
	if err != nil || len(es) != 1 || es[0].State != contract.EffortActive || es[0].Phase != 1 {
		t.Errorf("efforts of /work/app after the agent went = %+v, %v", es, err)
	}
	if hist, err := db.EffortHistory(ctx, e.ID); err != nil || len(hist) != 3 {
		t.Errorf("history = %d checkpoints, %v", len(hist), err)
	}
}

// A row the daemon cannot read (written by hand, or by another version)
// is an internal error naming the effort, never an invalid request.
func TestEffortBadJSONIsInternal(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	e, _ := mustStart(t, db, newEffort(nil))
	// Well-formed JSON of the wrong shape passes the CHECKs on both
	// engines.
	mustExec(t, db, `UPDATE efforts SET dirs_json = '{"a": 1}' WHERE id = ?`, e.ID)
	reads := map[string]func() error{
		"GetEffort": func() error { _, err := db.GetEffort(ctx, e.ID); return err },
		"Efforts":   func() error { _, err := db.Efforts(ctx, EffortFilter{}); return err },
		"ActiveEffort": func() error {
			_, _, err := db.ActiveEffort(ctx, e.Agent)
			return err
		},
		"Advance": func() error {
			_, err := db.AdvanceEffort(ctx, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1"})
			return err
		},
	}
	for what, read := range reads {
		wantCode(t, what, read(), contract.CodeInternal, "effort effort-1 in the database")
	}
	mustExec(t, db, `UPDATE efforts SET dirs_json = '[]' WHERE id = ?`, e.ID)

	// Malformed JSON, past the CHECKs.
	err := db.write(ctx, func(conn querier) error {
		if testEngine == "postgres" {
			for _, c := range []string{"efforts DROP CONSTRAINT efforts_skill_json_check", "efforts DROP CONSTRAINT efforts_state_check",
				"effort_checkpoints DROP CONSTRAINT effort_checkpoints_proof_json_check"} {
				if err := conn.execute(`ALTER TABLE `+c, nil); err != nil {
					return err
				}
			}
			return nil
		}
		return sqlitex.ExecuteScript(rawSQLite(conn), `PRAGMA ignore_check_constraints = ON;`, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `UPDATE efforts SET skill_json = '{"name": ' WHERE id = ?`, e.ID)
	mustExec(t, db, `UPDATE effort_checkpoints SET proof_json = 'not json' WHERE effort_id = ?`, e.ID)
	wantCode(t, "a malformed snapshot", reads["GetEffort"](), contract.CodeInternal, "its skill snapshot is not JSON")
	mustExec(t, db, `UPDATE efforts SET skill_json = '{}' WHERE id = ?`, e.ID)
	_, err = db.EffortHistory(ctx, e.ID)
	wantCode(t, "a malformed proof", err, contract.CodeInternal, "checkpoint 1 of effort effort-1 in the database")
	mustExec(t, db, `UPDATE efforts SET state = 'dreaming' WHERE id = ?`, e.ID)
	wantCode(t, "an unknown state", reads["GetEffort"](), contract.CodeInternal, `unknown effort state "dreaming"`)
}

// ActiveEffortPhase, the gate's read on every tool call, says where the
// agent's active effort is, follows it from phase to phase, and finds
// nothing once it has ended or for an agent without one.
func TestEffortActivePhase(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	alice := AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}
	if _, found, err := db.ActiveEffortPhase(ctx, alice); err != nil || found {
		t.Fatalf("before any effort: found %v, %v", found, err)
	}
	e, _ := mustStart(t, db, newEffort(nil))
	want := EffortPhase{ID: e.ID, Ordinal: 1, Phase: 0, PhaseName: implementPhases[0]}
	if got, found, err := db.ActiveEffortPhase(ctx, alice); err != nil || !found || got != want {
		t.Fatalf("at the start: %+v %v %v, want %+v", got, found, err, want)
	}
	mustAdvance(t, db, Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1"})
	want.Phase, want.PhaseName = 1, implementPhases[1]
	if got, found, err := db.ActiveEffortPhase(ctx, alice); err != nil || !found || got != want {
		t.Fatalf("after one advance: %+v %v %v, want %+v", got, found, err, want)
	}
	if _, err := db.FinishEffort(ctx, Finish{ID: e.ID, Abandon: true, Reason: "done testing"}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := db.ActiveEffortPhase(ctx, alice); err != nil || found {
		t.Fatalf("after the effort ended: %+v %v %v, want none", got, found, err)
	}
}
