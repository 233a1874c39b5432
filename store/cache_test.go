package store

import (
	"slices"
	"testing"

	"github.com/agent-worker/agent-worker/host/contract"
)

// The channel's write path asks Members on every message; the answer kept
// in memory must follow every write that changes a team, at once.
func TestMembersFollowTeamWrites(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	scope := Scope{Workflow: "review", Tag: "main"}
	if _, err := db.Members(ctx, scope); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Fatalf("Members of a workflow that does not exist: %v, want NotFound", err)
	}
	if _, err := db.CreateWorkflow(ctx, Workflow{Name: "review", Tag: "main", LongMessageChars: 900}); err != nil {
		t.Fatal(err)
	}
	want := func(names ...string) {
		t.Helper()
		m, err := db.Members(ctx, scope)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Names, names) || m.LongMessageChars != 900 {
			t.Fatalf("Members = %v (long %d), want %v (long 900)", m.Names, m.LongMessageChars, names)
		}
	}
	want()
	for _, name := range []string{"bob", "alice"} {
		if _, err := db.CreateAgent(ctx, Agent{Name: name, Workflow: "review", Tag: "main", Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	want("alice", "bob")
	if _, _, err := db.SpawnAgent(ctx, Agent{Name: "carol", Workflow: "review", Tag: "main", Backend: "mock", SpawnedBy: "alice"}); contract.ErrorCode(err) != contract.CodePermission {
		t.Fatalf("spawn by an agent without can_spawn: %v", err)
	}
	want("alice", "bob")
	if err := db.DeleteAgent(ctx, AgentKey{Name: "bob", Workflow: "review", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	want("alice")
	if err := db.DeleteWorkflow(ctx, "review", "main"); err != nil {
		t.Fatal(err)
	}
	if m, err := db.Members(ctx, scope); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Fatalf("Members after the workflow was deleted: %v, %v; want NotFound", m, err)
	}
}

// ConfigGeneration moves with every write that redefines an agent, and
// not with one that only changes its state.
func TestConfigGeneration(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	a, err := db.CreateAgent(ctx, Agent{Name: "ext", Workflow: "global", Tag: "main", Backend: "external"})
	if err != nil {
		t.Fatal(err)
	}
	g0, ok := db.ConfigGeneration()
	if ok == db.Cluster() {
		t.Fatalf("ConfigGeneration ok = %v in a cluster = %v", ok, db.Cluster())
	}
	if err := db.SetAgentState(ctx, a.Key(), contract.AgentRunning, ""); err != nil {
		t.Fatal(err)
	}
	if g, _ := db.ConfigGeneration(); g != g0 {
		t.Fatalf("a state change moved the generation %d → %d", g0, g)
	}
	a.Backend = "mock"
	if err := db.UpdateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	if g, _ := db.ConfigGeneration(); g == g0 {
		t.Fatal("redefining the agent did not move the generation")
	}
}
