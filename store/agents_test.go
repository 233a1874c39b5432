package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// ignoreTimes compares agents and workflows without their timestamps,
// which TestInjectedNow covers.
var ignoreTimes = cmpopts.IgnoreFields(Agent{}, "CreatedAt", "UpdatedAt")

func TestAgentCRUD(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()

	in := Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "mock", Model: "m1"}
	created, err := db.CreateAgent(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.State = "idle"
	if diff := cmp.Diff(want, created, ignoreTimes); diff != "" {
		t.Errorf("CreateAgent returned (-want +got):\n%s", diff)
	}
	got, err := db.GetAgent(ctx, in.Key())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("GetAgent (-created +got):\n%s", diff)
	}

	if err := db.SetAgentState(ctx, in.Key(), "failed", "backend exited 1"); err != nil {
		t.Fatal(err)
	}
	got, err = db.GetAgent(ctx, in.Key())
	if err != nil || got.State != "failed" || got.Error != "backend exited 1" {
		t.Errorf("after SetAgentState: state %q error %q, %v", got.State, got.Error, err)
	}

	for _, k := range []AgentKey{{"bob", "global", "main"}, {"carol", "review", "pr-2"}, {"dave", "review", "pr-1"}} {
		if _, err := db.CreateAgent(ctx, Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(f AgentFilter) []AgentKey {
		as, err := db.ListAgents(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var keys []AgentKey
		for _, a := range as {
			keys = append(keys, a.Key())
		}
		return keys
	}
	for name, tc := range map[string]struct {
		f    AgentFilter
		want []AgentKey
	}{
		"all, ordered": {AgentFilter{}, []AgentKey{
			{"alice", "global", "main"}, {"bob", "global", "main"}, {"dave", "review", "pr-1"}, {"carol", "review", "pr-2"}}},
		"by workflow": {AgentFilter{Workflow: "review"}, []AgentKey{{"dave", "review", "pr-1"}, {"carol", "review", "pr-2"}}},
		"by tag":      {AgentFilter{Tag: "pr-2"}, []AgentKey{{"carol", "review", "pr-2"}}},
		"no match":    {AgentFilter{Workflow: "nope"}, nil},
	} {
		if diff := cmp.Diff(tc.want, list(tc.f)); diff != "" {
			t.Errorf("ListAgents %s (-want +got):\n%s", name, diff)
		}
	}

	// A new workflow:tag is created, running, with its first agent.
	w, err := db.GetWorkflow(ctx, "review", "pr-2")
	if err != nil || w.State != "running" {
		t.Errorf("GetWorkflow(review:pr-2) = %+v, %v; want a running workflow", w, err)
	}

	if err := db.DeleteAgent(ctx, in.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetAgent(ctx, in.Key()); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("GetAgent after delete: %v, want not found", err)
	}
}

func TestAgentErrors(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	alice := AgentKey{"alice", "global", "main"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	missing := AgentKey{"zed", "global", "main"}

	for name, tc := range map[string]struct {
		call     func() error
		code     contract.Code
		contains string
	}{
		"duplicate": {func() error {
			_, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main"})
			return err
		}, contract.CodeConflict, `agent "alice@global:main" already exists`},
		"empty name": {func() error {
			_, err := db.CreateAgent(ctx, Agent{Workflow: "global", Tag: "main"})
			return err
		}, contract.CodeInvalid, "required"},
		"empty tag": {func() error {
			_, err := db.CreateAgent(ctx, Agent{Name: "x", Workflow: "global"})
			return err
		}, contract.CodeInvalid, "required"},
		"unknown state on create": {func() error {
			_, err := db.CreateAgent(ctx, Agent{Name: "x", Workflow: "global", Tag: "main", State: "dancing"})
			return err
		}, contract.CodeInvalid, `unknown state "dancing"`},
		"config Extra not JSON": {func() error {
			_, err := db.CreateAgent(ctx, Agent{Name: "x", Workflow: "global", Tag: "main", Config: backend.AgentConfig{Extra: map[string]json.RawMessage{"script": []byte("{")}}})
			return err
		}, contract.CodeInvalid, "JSON"},
		"get missing": {func() error {
			_, err := db.GetAgent(ctx, missing)
			return err
		}, contract.CodeNotFound, `agent "zed@global:main" not found`},
		"set state of missing": {func() error { return db.SetAgentState(ctx, missing, "idle", "") }, contract.CodeNotFound, "not found"},
		"set unknown state":    {func() error { return db.SetAgentState(ctx, alice, "dancing", "") }, contract.CodeInvalid, "dancing"},
		"delete missing":       {func() error { return db.DeleteAgent(ctx, missing) }, contract.CodeNotFound, "not found"},
		"inbox of missing": {func() error {
			_, err := db.InboxDepth(ctx, missing)
			return err
		}, contract.CodeNotFound, "not found"},
	} {
		err := tc.call()
		if contract.ErrorCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: err = %v (code %q), want code %q mentioning %q", name, err, contract.ErrorCode(err), tc.code, tc.contains)
		}
	}
}

func TestConstraintErrorsAreTyped(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	exec := func(query string) error {
		return db.write(t.Context(), func(conn querier) error { return conn.execute(query, nil) })
	}
	for query, want := range map[string]contract.Code{
		`INSERT INTO workflows (name, tag, created_at, updated_at) VALUES ('global', 'main', 0, 0)`:         contract.CodeConflict,
		`INSERT INTO agents (name, workflow, tag, created_at, updated_at) VALUES ('a', 'no', 'such', 0, 0)`: contract.CodeInvalid,
		`INSERT INTO workflows (name, tag, state, created_at, updated_at) VALUES ('w', 't', 'bad', 0, 0)`:   contract.CodeInvalid,
	} {
		if err := exec(query); contract.ErrorCode(err) != want {
			t.Errorf("%s: err = %v (code %q), want code %q", query, err, contract.ErrorCode(err), want)
		}
	}
}

func TestResetRunningAgents(t *testing.T) {
	sqliteOnly(t, "in a cluster a fresh daemon resets nothing; RecoverDeadDaemons takes back a dead member's agents")
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	states := map[string]contract.AgentState{"a": "running", "b": "running", "c": "failed", "d": "idle", "e": "stopped", "f": "paused", "g": "over_budget"}
	for name, state := range states {
		if _, err := db.CreateAgent(ctx, Agent{Name: name, Workflow: "w", Tag: "t", State: state}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.ResetRunningAgents(ctx)
	if err != nil || n != 2 {
		t.Errorf("ResetRunningAgents = %d, %v; want 2", n, err)
	}
	as, err := db.ListAgents(ctx, AgentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]contract.AgentState{}
	for _, a := range as {
		got[a.Name] = a.State
	}
	want := map[string]contract.AgentState{"a": "idle", "b": "idle", "c": "failed", "d": "idle", "e": "stopped", "f": "paused", "g": "over_budget"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states after reset (-want +got):\n%s", diff)
	}
}

// addMessage writes a message to workflow:tag addressed to the given agents,
// the way the channel code does, and returns its seq.
func addMessage(t *testing.T, db *DB, id, workflow, tag string, to ...string) int {
	t.Helper()
	mustExec(t, db, `INSERT INTO messages (id, workflow, tag, sender, content, created_at) VALUES (?, ?, ?, 'user', 'hi', 0)`, id, workflow, tag)
	for _, agent := range to {
		mustExec(t, db, `INSERT INTO message_recipients (workflow, tag, agent, seq) SELECT workflow, tag, ?, seq FROM messages WHERE id = ?`, agent, id)
	}
	return queryInt(t, db, `SELECT seq FROM messages WHERE id = ?`, id)
}

func TestInboxDepth(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	alice, bob, other := AgentKey{"alice", "team", "t"}, AgentKey{"bob", "team", "t"}, AgentKey{"alice", "team", "t2"}
	for _, k := range []AgentKey{alice, bob, other} {
		if _, err := db.CreateAgent(ctx, Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int
	for i, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		to := []string{"alice"}
		if i == 4 {
			to = append(to, "bob")
		}
		seqs = append(seqs, addMessage(t, db, id, "team", "t", to...))
	}
	addMessage(t, db, "x1", "team", "t2", "alice") // same name, other tag

	depth := func(k AgentKey) int {
		t.Helper()
		n, err := db.InboxDepth(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := map[string]int{"alice": depth(alice), "bob": depth(bob), "other": depth(other)}; !cmp.Equal(got, map[string]int{"alice": 5, "bob": 1, "other": 1}) {
		t.Errorf("depths before ack = %v", got)
	}

	mustExec(t, db, `INSERT INTO inbox_ack (workflow, tag, agent, cursor, updated_at) VALUES ('team', 't', 'alice', ?, 0)`, seqs[2])
	if got := depth(alice); got != 2 {
		t.Errorf("alice's depth after acking through m3 = %d, want 2", got)
	}
	if got := depth(bob); got != 1 {
		t.Errorf("bob's depth changed by alice's ack: %d", got)
	}
	// Every agent's depth in one read agrees with the one-agent reads.
	all, err := db.InboxDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[AgentKey]int{alice: 2, bob: 1, other: 1}, all); diff != "" {
		t.Errorf("InboxDepths (-want +got):\n%s", diff)
	}

	// Deleting alice takes her cursor and inbox entries with her.
	if err := db.DeleteAgent(ctx, alice); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"inbox_ack", "message_recipients"} {
		if n := queryInt(t, db, `SELECT count(*) FROM `+table+` WHERE workflow = 'team' AND tag = 't' AND agent = 'alice'`); n != 0 {
			t.Errorf("%s keeps %d rows of the deleted agent", table, n)
		}
	}
	if got := depth(bob); got != 1 {
		t.Errorf("bob's depth after alice was deleted = %d, want 1", got)
	}
}

func TestInboxDepthUsesIndex(t *testing.T) {
	sqliteOnly(t, "SQLite's query plan")
	t.Parallel()
	db := openTest(t)
	var plan []string
	err := db.read(t.Context(), func(conn querier) error {
		return conn.execute("EXPLAIN QUERY PLAN "+inboxDepthSQL, &execOptions{
			Args:       []any{"team", "t", "alice"},
			ResultFunc: func(s row) error { plan = append(plan, s.ColumnText(3)); return nil },
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "\n")
	if strings.Contains(strings.ReplaceAll(joined, "SCAN CONSTANT ROW", ""), "SCAN") || !strings.Contains(joined, "SEARCH message_recipients USING PRIMARY KEY (workflow=? AND tag=? AND agent=? AND seq>?)") {
		t.Errorf("inbox depth does not use a primary-key range search:\n%s", joined)
	}
}

// A config is stored as JSON and read back typed; a row whose config the
// daemon cannot read (written by hand, or before configs were checked) is
// reported with the agent's name and what to do, not passed on half-read.
func TestAgentConfigIsTypedInTheStore(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	cfg := backend.AgentConfig{MaxSteps: 4, Env: map[string]string{"K": "v"}, Extra: map[string]json.RawMessage{"script": json.RawMessage(`[{"reply":"hi"}]`)}}
	a, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "mock", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Config.Equal(cfg) {
		t.Errorf("stored config = %+v, want %+v", a.Config, cfg)
	}
	maxSteps := `SELECT json_extract(config_json, '$.max_steps') FROM agents WHERE name = 'alice'`
	if testEngine == "postgres" {
		maxSteps = `SELECT (config_json::jsonb ->> 'max_steps')::bigint FROM agents WHERE name = 'alice'`
	}
	if got := queryInt(t, db, maxSteps); got != 4 {
		t.Errorf("config_json max_steps = %d, want 4", got)
	}
	mustExec(t, db, `UPDATE agents SET config_json = '{"env": 5}' WHERE name = 'alice'`)
	_, err = db.GetAgent(ctx, a.Key())
	if contract.ErrorCode(err) != contract.CodeInternal || !strings.Contains(err.Error(), `agent "alice@global:main" has a stored config the daemon cannot read`) ||
		!strings.Contains(err.Error(), "config env: want an object of strings") {
		t.Errorf("reading an unreadable config: %v", err)
	}
}

// Every state of the vocabulary (the second wave's too) is stored and
// read back as itself.
func TestEveryStateRoundTrips(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	a, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "team", Tag: "main", Backend: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range contract.AgentStates {
		if err := db.SetAgentState(ctx, a.Key(), s, ""); err != nil {
			t.Fatalf("set agent %s: %v", s, err)
		}
		if got, err := db.GetAgent(ctx, a.Key()); err != nil || got.State != s {
			t.Errorf("agent state %s read back as %q (%v)", s, got.State, err)
		}
	}
	for _, s := range contract.WorkflowStates {
		if err := db.SetWorkflowState(ctx, "team", "main", s, ""); err != nil {
			t.Fatalf("set workflow %s: %v", s, err)
		}
		if got, err := db.GetWorkflow(ctx, "team", "main"); err != nil || got.State != s {
			t.Errorf("workflow state %s read back as %q (%v)", s, got.State, err)
		}
	}
	for i, s := range contract.RunStates {
		id := fmt.Sprintf("run_%d", i)
		if _, err := db.StartRun(ctx, Run{ID: id, Agent: a.Key(), Backend: "mock", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		if err := db.FinishRun(ctx, id, s, "", nil); err != nil {
			t.Fatalf("finish run %s: %v", s, err)
		}
		if got, _, err := db.GetRun(ctx, id); err != nil || got.State != s {
			t.Errorf("run state %s read back as %q (%v)", s, got.State, err)
		}
	}
	if err := db.SetAgentState(ctx, a.Key(), "dancing", ""); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("set an unknown state: %v", err)
	}
}

// A state the daemon does not know, found in the database (written by
// hand or by a newer version), is reported naming the row and the value
// when read, never passed on as if it were one.
func TestUnknownStateInTheDatabaseIsReported(t *testing.T) {
	sqliteOnly(t, "writes a bad row past CHECK with a SQLite pragma")
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	a, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "team", Tag: "main", Backend: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.StartRun(ctx, Run{ID: "run_x", Agent: a.Key(), Backend: "mock", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	err = db.write(ctx, func(conn querier) error {
		return sqlitex.ExecuteScript(rawSQLite(conn), `PRAGMA ignore_check_constraints = ON;
			UPDATE agents SET state = 'dancing' WHERE name = 'alice';
			UPDATE runs SET state = 'vanished' WHERE id = 'run_x';
			UPDATE workflows SET state = 'asleep' WHERE name = 'team';
			PRAGMA ignore_check_constraints = OFF;`, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	for what, read := range map[string]func() error{
		`agent "alice@team:main" in the database: unknown agent state "dancing"`: func() error { _, err := db.GetAgent(ctx, a.Key()); return err },
		`agent "alice@team:main" in the database: unknown agent state "dancing"; list`: func() error {
			_, err := db.ListAgents(ctx, AgentFilter{})
			return err
		},
		`run run_x in the database: unknown run state "vanished"`:               func() error { _, _, err := db.GetRun(ctx, "run_x"); return err },
		`workflow "team:main" in the database: unknown workflow state "asleep"`: func() error { _, err := db.GetWorkflow(ctx, "team", "main"); return err },
	} {
		want, _, _ := strings.Cut(what, "; ")
		if err := read(); contract.ErrorCode(err) != contract.CodeInternal || !strings.Contains(err.Error(), want) {
			t.Errorf("reading: %v, want an internal error saying %q", err, want)
		}
	}
}

// The store's errors are the daemon's codes: errors.Is and errors.As reach
// them through the callers' wrapping, all the way to the HTTP layer.
func TestStoreErrorsAreAPICodes(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	_, err := db.GetAgent(ctx, AgentKey{Name: "zed", Workflow: "global", Tag: "main"})
	wrapped := fmt.Errorf("resume zed: %w", err)
	var coded *contract.Error
	if !errors.Is(wrapped, contract.ErrNotFound) || !errors.As(wrapped, &coded) || coded.Code != contract.CodeNotFound {
		t.Errorf("a missing agent: %v", wrapped)
	}
	if _, err := db.CreateAgent(ctx, Agent{Name: "a", Workflow: "global", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateAgent(ctx, Agent{Name: "a", Workflow: "global", Tag: "main", Backend: "mock"})
	if !errors.Is(fmt.Errorf("new: %w", err), contract.ErrConflict) {
		t.Errorf("a duplicate agent: %v", err)
	}
	// A constraint SQLite enforces (no message of ours) is classified too.
	err = db.write(ctx, func(conn querier) error {
		return conn.execute(`INSERT INTO agents (name, workflow, tag, created_at, updated_at) VALUES ('a', 'global', 'main', 0, 0)`, nil)
	})
	if !errors.Is(err, contract.ErrConflict) {
		t.Errorf("a raw duplicate insert: %v (%s)", err, contract.ErrorCode(err))
	}
	err = db.write(ctx, func(conn querier) error {
		return conn.execute(`INSERT INTO agents (name, workflow, tag, created_at, updated_at) VALUES ('b', 'nowhere', 'main', 0, 0)`, nil)
	})
	if !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("a broken reference: %v (%s)", err, contract.ErrorCode(err))
	}
}

// The write observer hears every write, so the daemon's store-write
// latency metric counts each transaction once.
func TestObserveWriteHearsEachWrite(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var heard []time.Duration
	db := openAt(t, testPath(t), Options{ObserveWrite: func(d time.Duration) {
		mu.Lock()
		heard = append(heard, d)
		mu.Unlock()
	}})
	mu.Lock()
	before := len(heard) // migrations write too
	mu.Unlock()
	if _, err := db.CreateAgent(t.Context(), Agent{Name: "alice", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InboxDepth(t.Context(), AgentKey{"alice", "global", "main"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := len(heard) - before; got != 1 {
		t.Errorf("one write and one read were observed as %d writes, want 1", got)
	}
}
