package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

var alice = store.AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}

// exampleSkill is examples/skills/implement/SKILL.md, as an effort's
// snapshot holds it.
func exampleSkill(t testing.TB) (json.RawMessage, []string) {
	t.Helper()
	b, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	s, err := skill.Parse("", b)
	if err != nil {
		t.Fatal(err)
	}
	return skill.Snapshot("implement/SKILL.md", b), s.PhaseNames()
}

// newGate is a gate over a fresh store with alice and bob, alice in an
// effort of the example skill on dir, in phase.
func newGate(t testing.TB, phase int) (*Gate, *store.DB, store.Effort) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "aw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, n := range []string{"alice", "bob"} {
		if _, err := db.CreateAgent(context.Background(), store.Agent{Name: n, Workflow: "wf", Tag: "main", Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	snap, phases := exampleSkill(t)
	e, _, err := db.StartEffort(context.Background(), store.NewEffort{Agent: alice, Dir: t.TempDir(), Skill: "implement",
		Snapshot: snap, Phases: phases, Mode: "solo", Nonce: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	for e.Phase < phase {
		if e, err = db.AdvanceEffort(context.Background(), store.Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: fmt.Sprint("n", e.Phase+1)}); err != nil {
			t.Fatal(err)
		}
	}
	return New(db, nil), db, e
}

func TestDecide(t *testing.T) {
	t.Parallel()
	const plan, verify = 0, 3
	tests := map[string]struct {
		phase   int
		who     store.AgentKey
		call    func(e store.Effort) skill.Call
		allowed bool
		reason  string // a part of the refusal
	}{
		"plan refuses write_file": {phase: plan, who: alice,
			call:   func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "main.go"} },
			reason: "phase plan of skill implement does not allow write_file: write_file is denied by \"write_file\"; finish this phase first (effort_continue with proof plan_summary), phase test-first allows it"},
		"plan allows reading": {phase: plan, who: alice, allowed: true,
			call: func(store.Effort) skill.Call { return skill.Call{Tool: "read_file", Path: "main.go"} }},
		"plan refuses git commit": {phase: plan, who: alice,
			call: func(store.Effort) skill.Call {
				return skill.Call{Tool: "run_shell", Command: "go test ./... && git commit -am wip"}
			},
			reason: "the command `git commit -am wip` is denied"},
		"plan lets the plan artifact be written": {phase: plan, who: alice, allowed: true,
			call: func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "1_IMPLEMENT_PLAN.md"} }},
		"plan lets it be written by its absolute path": {phase: plan, who: alice, allowed: true,
			call: func(e store.Effort) skill.Call {
				return skill.Call{Tool: "edit_file", Path: filepath.Join(e.Dir, "1_IMPLEMENT_PLAN.md")}
			}},
		"not another phase's artifact": {phase: plan, who: alice,
			call:   func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "1_IMPLEMENT.md"} },
			reason: "write_file is denied"},
		"not the artifact's name elsewhere": {phase: plan, who: alice,
			call:   func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "sub/1_IMPLEMENT_PLAN.md"} },
			reason: "write_file is denied"},
		"not outside the directory": {phase: plan, who: alice,
			call:   func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "/tmp/1_IMPLEMENT_PLAN.md"} },
			reason: "write_file is denied"},
		"effort tools always": {phase: plan, who: alice, allowed: true,
			call: func(store.Effort) skill.Call { return skill.Call{Tool: "mcp__agent-worker__effort_continue"} }},
		"verify allows go vet": {phase: verify, who: alice, allowed: true,
			call: func(store.Effort) skill.Call { return skill.Call{Tool: "run_shell", Command: "go vet ./..."} }},
		"verify refuses what its allow list lacks": {phase: verify, who: alice,
			call:   func(store.Effort) skill.Call { return skill.Call{Tool: "run_shell", Command: "rm -rf ."} },
			reason: "phase verify of skill implement does not allow run_shell `rm -rf .`: the command `rm -rf .` matches none of its allowed commands"},
		"no effort, no gate": {phase: plan, who: store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}, allowed: true,
			call: func(store.Effort) skill.Call { return skill.Call{Tool: "write_file", Path: "main.go"} }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, _, e := newGate(t, tc.phase)
			d, err := g.Decide(t.Context(), tc.who, tc.call(e))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Decide = %+v, want allowed %v with reason containing %q", d, tc.allowed, tc.reason)
			}
		})
	}
}

// The gate follows the effort: once the phase moves, the next call is
// decided by the new phase; once it ends, nothing is gated.
func TestDecideFollowsThePhase(t *testing.T) {
	t.Parallel()
	g, db, e := newGate(t, 0)
	write := skill.Call{Tool: "write_file", Path: "main_test.go"}
	if d, _ := g.Decide(t.Context(), alice, write); d.Allowed {
		t.Fatal("plan allowed write_file")
	}
	e, err := db.AdvanceEffort(t.Context(), store.Advance{ID: e.ID, From: 0, Nonce: e.Nonce, NewNonce: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := g.Decide(t.Context(), alice, write); !d.Allowed {
		t.Fatalf("test-first refused write_file: %s", d.Reason)
	}
	p, pe, found, err := g.Phase(t.Context(), alice)
	if err != nil || !found || p.Name != "test-first" || pe.ID != e.ID {
		t.Fatalf("Phase = %v %v %v %v, want test-first of %s", p, pe.ID, found, err, e.ID)
	}
	if _, err := db.FinishEffort(t.Context(), store.Finish{ID: e.ID, Abandon: true, Reason: "done with it"}); err != nil {
		t.Fatal(err)
	}
	if d, err := g.Decide(t.Context(), alice, skill.Call{Tool: "write_file", Path: "x"}); err != nil || !d.Allowed {
		t.Fatalf("after the effort: %+v %v, want allowed", d, err)
	}
}

// A snapshot that does not parse is the daemon not knowing: an error the
// callers refuse the call with, never an allowed call.
func TestDecideUnreadableSnapshot(t *testing.T) {
	t.Parallel()
	_, db, _ := newGate(t, 0)
	bob := store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
	if _, _, err := db.StartEffort(t.Context(), store.NewEffort{Agent: bob, Dir: t.TempDir(), Skill: "odd",
		Snapshot: json.RawMessage(`{"name":"odd"}`), Phases: []string{"one"}, Nonce: "n"}); err != nil {
		t.Fatal(err)
	}
	d, err := New(db, nil).Decide(t.Context(), bob, skill.Call{Tool: "read_file"})
	if err == nil || d.Allowed {
		t.Fatalf("Decide = %+v, %v; want an error", d, err)
	}
}

func TestObserve(t *testing.T) {
	t.Parallel()
	g, db, e := newGate(t, 1)
	zero, two := 0, 2
	run := g.Watch(alice, "run_1", e.Dir)
	events := []backend.Event{
		{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "1", Name: "run_shell", Args: json.RawMessage(`{"command":"go test ./..."}`)}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "1", Name: "run_shell", Args: json.RawMessage(`{"command":"go test ./..."}`), IsError: true, Exit: &two}},
		// Claude Code's results carry no arguments: the call's are used.
		{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "2", Name: "Write", Args: json.RawMessage(`{"file_path":"` + filepath.Join(e.Dir, "pkg", "x_test.go") + `"}`)}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "2", Name: "Write"}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "3", Name: "write_file", Args: json.RawMessage(`{"path":"y_test.go"}`)}},
		// A refused or failed write wrote nothing.
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "4", Name: "write_file", Args: json.RawMessage(`{"path":"z.go"}`), IsError: true}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "5", Name: "mcp__agent-worker__channel_send", Args: json.RawMessage(`{}`)}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "6", Name: "run_shell", Args: json.RawMessage(`{"command":"go vet ./..."}`), Exit: &zero}},
		{Kind: backend.EventText, Text: "I ran go test ./... and it passed"},
	}
	for _, ev := range events {
		run(t.Context(), ev)
	}
	// What the run in another directory wrote is kept absolute.
	if err := g.Observe(t.Context(), alice, "run_2", Observation{Kind: store.ObservedFile, Subject: "/elsewhere/a.go"}); err != nil {
		t.Fatal(err)
	}
	obs, err := db.Observations(t.Context(), e.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Kind    store.ObservationKind
		Subject string
		Exit    *int
	}
	var got []seen
	for _, o := range obs {
		got = append(got, seen{o.Kind, o.Subject, o.Exit})
	}
	want := []seen{
		{store.ObservedShell, "go test ./...", &two},
		{store.ObservedFile, "pkg/x_test.go", nil}, {store.ObservedTool, "Write", nil},
		{store.ObservedFile, "y_test.go", nil}, {store.ObservedTool, "write_file", nil},
		{store.ObservedTool, "channel_send", nil},
		{store.ObservedShell, "go vet ./...", &zero}, {store.ObservedTool, "run_shell", nil},
		{store.ObservedFile, "/elsewhere/a.go", nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
}

// An observation of a phase that has moved on, or of an agent without an
// effort, records nothing and fails nothing.
func TestObserveAfterThePhaseMoved(t *testing.T) {
	t.Parallel()
	g, db, e := newGate(t, 0)
	bob := store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
	if err := g.Observe(t.Context(), bob, "run_1", Observation{Kind: store.ObservedTool, Subject: "read_file"}); err != nil {
		t.Fatalf("no effort: %v", err)
	}
	// The phase moves between the read of the effort and the write: the
	// store's conflict is logged, not returned.
	if _, err := db.Observe(t.Context(), e.ID, 0, store.ObservedTool, "x", nil, "run_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AdvanceEffort(t.Context(), store.Advance{ID: e.ID, From: 0, Nonce: e.Nonce, NewNonce: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Observe(t.Context(), e.ID, 0, store.ObservedTool, "late", nil, "run_1"); err == nil {
		t.Fatal("the store took an observation of a phase that has ended")
	}
	if err := g.Observe(t.Context(), alice, "run_1", Observation{Kind: store.ObservedTool, Subject: "read_file"}); err != nil {
		t.Fatal(err)
	}
	if obs, _ := db.Observations(t.Context(), e.ID, 1); len(obs) != 1 || obs[0].Subject != "read_file" {
		t.Errorf("phase 2 observations = %+v, want the one read_file", obs)
	}
}

// BenchmarkDecide is what the gate adds to a tool call (issue 43's goal:
// at most 0.1 ms): a store read of the agent's active effort and the
// phase's check, on SQLite.
func BenchmarkDecide(b *testing.B) {
	g, _, _ := newGate(b, 3)
	ctx := context.Background()
	call := skill.Call{Tool: "run_shell", Command: "go test ./... && go vet ./..."}
	b.ReportAllocs()
	for b.Loop() {
		if d, err := g.Decide(ctx, alice, call); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkDecideNoEffort is the cost for an agent that walks no effort.
func BenchmarkDecideNoEffort(b *testing.B) {
	g, _, _ := newGate(b, 0)
	ctx := context.Background()
	bob := store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
	for b.Loop() {
		if _, err := g.Decide(ctx, bob, skill.Call{Tool: "write_file", Path: "x"}); err != nil {
			b.Fatal(err)
		}
	}
}

// A run's events are the effort's heartbeat: the first moves it, the
// next within BeatEvery do not (one store write per few seconds), a usage
// event always does and records the context used, a later event moves it
// again; an agent without an effort is never written for.
func TestWatchHeartbeats(t *testing.T) {
	t.Parallel()
	g, db, e := newGate(t, 0)
	t0 := time.Now().Add(time.Hour).Truncate(time.Millisecond) // after the start's own heartbeat
	now := t0
	g.now = func() time.Time { return now }
	watch := g.Watch(alice, "run-1", e.Dir)
	beat := func(at time.Duration, ev backend.Event, want time.Duration, use *store.ContextUse) {
		t.Helper()
		now = t0.Add(at)
		watch(t.Context(), ev)
		got, err := db.GetEffort(t.Context(), e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.HeartbeatAt.Equal(t0.Add(want)) {
			t.Errorf("after an event at +%v the heartbeat is at +%v, want +%v", at, got.HeartbeatAt.Sub(t0), want)
		}
		if !cmp.Equal(got.Context, use) {
			t.Errorf("after an event at +%v the context use is %+v, want %+v", at, got.Context, use)
		}
	}
	text := backend.Event{Kind: backend.EventText, Text: "thinking"}
	beat(0, text, 0, nil)
	beat(time.Second, text, 0, nil)
	use := &store.ContextUse{Tokens: 1200 + 80}
	beat(2*time.Second, backend.Event{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 1200, OutputTokens: 80}}, 2*time.Second, use)
	beat(3*time.Second, text, 2*time.Second, use)
	beat(2*time.Second+BeatEvery, text, 2*time.Second+BeatEvery, use)

	bob := store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
	g.Watch(bob, "run-2", e.Dir)(t.Context(), text) // no effort: nothing to write, no error
}

// A file or directory tool's successful result inside the effort's
// directory adds the directory it reached to the effort, once; the
// effort's own directory, a path outside it and a refused or failed call
// add nothing.
func TestWatchTouchedDirs(t *testing.T) {
	t.Parallel()
	g, db, e := newGate(t, 0)
	watch := g.Watch(alice, "run-1", e.Dir)
	result := func(id, name, args string, isErr bool) {
		watch(t.Context(), backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}})
		watch(t.Context(), backend.Event{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: id, Name: name, IsError: isErr}})
	}
	result("1", "read_file", `{"path":"pkg/deep/a.go"}`, false)
	result("2", "Read", `{"file_path":"`+filepath.Join(e.Dir, "pkg", "deep", "b.go")+`"}`, false)
	result("3", "Write", `{"file_path":"`+filepath.Join(e.Dir, "main.go")+`"}`, false)
	result("4", "read_file", `{"path":"/etc/hostname"}`, false)
	result("5", "write_file", `{"path":"cmd/x/main.go"}`, true)
	result("6", "Glob", `{"pattern":"*.go","path":"internal/y"}`, false)
	result("7", "run_shell", `{"command":"ls other"}`, false)
	got, err := db.GetEffort(t.Context(), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(e.Dir, "pkg", "deep"), filepath.Join(e.Dir, "internal", "y")}
	if !cmp.Equal(got.Dirs, want) {
		t.Errorf("the effort's dirs = %q, want %q", got.Dirs, want)
	}
}

// heartbeatGate is a gate with alice in an effort of a skill that asks for
// a log entry every 3 tool calls in its work phase and never in its
// explore phase.
func heartbeatGate(t *testing.T) (*Gate, *store.DB, store.Effort) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "aw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateAgent(context.Background(), store.Agent{Name: "alice", Workflow: "wf", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	content := []byte("---\nname: long-haul\ndescription: log as you go\nheartbeat: {every: 3}\nphases:\n  - name: explore\n    heartbeat: {every: 0}\n  - name: work\n    tools: {deny: [\"shell:rm *\"]}\n---\n")
	e, _, err := db.StartEffort(context.Background(), store.NewEffort{Agent: alice, Dir: t.TempDir(), Skill: "long-haul",
		Snapshot: skill.Snapshot("long-haul/SKILL.md", content), Phases: []string{"explore", "work"}, Mode: "solo", Nonce: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	return New(db, nil), db, e
}

// TestHeartbeatGate: after every allowed calls without a log entry the
// next call is refused with "log your progress first"; the effort's own
// calls pass and do not count; a log entry starts the count again; a
// phase with every 0 never refuses.
func TestHeartbeatGate(t *testing.T) {
	t.Parallel()
	g, db, e := heartbeatGate(t)
	ctx := context.Background()
	decide := func(call skill.Call) skill.Decision {
		t.Helper()
		d, err := g.Decide(ctx, alice, call)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	read := skill.Call{Tool: "Read", Path: "/x/main.go"}
	for i := range 10 {
		if d := decide(read); !d.Allowed {
			t.Fatalf("explore (every 0), call %d refused: %s", i+1, d.Reason)
		}
	}
	if _, err := db.AdvanceEffort(ctx, store.Advance{ID: e.ID, From: 0, Nonce: "n0", NewNonce: "n1"}); err != nil {
		t.Fatal(err)
	}
	if d := decide(skill.Call{Tool: "Bash", Command: "rm -rf x"}); d.Allowed {
		t.Fatal("a call the rules refuse was allowed")
	}
	for i := range 3 {
		if d := decide(read); !d.Allowed {
			t.Fatalf("work, call %d of 3 refused: %s", i+1, d.Reason)
		}
	}
	d := decide(read)
	if d.Allowed || !strings.HasPrefix(d.Reason, "log your progress first") || !strings.Contains(d.Reason, "3 tool calls") || d.Rule != "heartbeat" {
		t.Fatalf("the 4th call without a log entry: %+v", d)
	}
	for _, c := range []skill.Call{{Tool: "mcp__agent-worker__effort_log"}, {Tool: "Bash", Command: "/usr/local/bin/agent-worker effort log 'did x' --agent alice@wf:main"}} {
		if d := decide(c); !d.Allowed {
			t.Errorf("%+v refused by the heartbeat gate: %s", c, d.Reason)
		}
	}
	if d := decide(read); d.Allowed {
		t.Error("the effort's own calls reset the count; only a log entry does")
	}
	g.Logged(e.ID)
	if d := decide(read); !d.Allowed {
		t.Errorf("after a log entry: %s", d.Reason)
	}
}
