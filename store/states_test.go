package store

import (
	"testing"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A state move happens only from the states it names, so the end of a
// run (running → idle) never overwrites a pause that landed during it.
func TestMoveAgentState(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	k := AgentKey{Name: "a", Workflow: "w", Tag: "t"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "a", Workflow: "w", Tag: "t", State: contract.AgentRunning}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetAgentState(ctx, k, contract.AgentPaused, ""); err != nil {
		t.Fatal(err)
	}
	moved, err := db.MoveAgentState(ctx, k, []contract.AgentState{contract.AgentRunning}, contract.AgentIdle, "")
	if err != nil || moved {
		t.Errorf("running → idle of a paused agent: moved %v, %v", moved, err)
	}
	if a, err := db.GetAgent(ctx, k); err != nil || a.State != contract.AgentPaused {
		t.Errorf("state = %s, %v; want paused", a.State, err)
	}
	moved, err = db.MoveAgentState(ctx, k, []contract.AgentState{contract.AgentPaused, contract.AgentFailed}, contract.AgentIdle, "")
	if err != nil || !moved {
		t.Errorf("paused → idle: moved %v, %v", moved, err)
	}
	if moved, err := db.MoveAgentState(ctx, k, nil, contract.AgentIdle, ""); err != nil || moved {
		t.Errorf("a move from no state: moved %v, %v", moved, err)
	}
	if _, err := db.MoveAgentState(ctx, AgentKey{Name: "x", Workflow: "w", Tag: "t"}, []contract.AgentState{contract.AgentIdle}, contract.AgentPaused, ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("move of a missing agent: %v", err)
	}
	if _, err := db.MoveAgentState(ctx, k, []contract.AgentState{contract.AgentIdle}, "sleepy", ""); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("move to an unknown state: %v", err)
	}
}

func TestMoveWorkflowState(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.CreateWorkflow(ctx, Workflow{Name: "w", Tag: "t"}); err != nil {
		t.Fatal(err)
	}
	from := []contract.WorkflowState{contract.WorkflowRunning}
	if moved, err := db.MoveWorkflowState(ctx, "w", "t", from, contract.WorkflowPaused, ""); err != nil || !moved {
		t.Errorf("running → paused: moved %v, %v", moved, err)
	}
	if moved, err := db.MoveWorkflowState(ctx, "w", "t", from, contract.WorkflowPaused, ""); err != nil || moved {
		t.Errorf("running → paused of a paused workflow: moved %v, %v", moved, err)
	}
	if w, err := db.GetWorkflow(ctx, "w", "t"); err != nil || w.State != contract.WorkflowPaused {
		t.Errorf("state = %s, %v; want paused", w.State, err)
	}
	if _, err := db.MoveWorkflowState(ctx, "nope", "t", from, contract.WorkflowPaused, ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("move of a missing workflow: %v", err)
	}
}

// An agent moves to running only while its workflow runs: a pause of the
// workflow that commits before the move holds the run, however late the
// scheduler read the workflow's state.
func TestMoveToRunningNeedsARunningWorkflow(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"w", "t"}, "a")
	k := AgentKey{Name: "a", Workflow: "w", Tag: "t"}
	toRunning := func() bool {
		t.Helper()
		moved, err := db.MoveAgentState(ctx, k, []contract.AgentState{contract.AgentIdle}, contract.AgentRunning, "")
		if err != nil {
			t.Fatal(err)
		}
		return moved
	}
	if _, err := db.MoveWorkflowState(ctx, "w", "t", []contract.WorkflowState{contract.WorkflowRunning}, contract.WorkflowPaused, ""); err != nil {
		t.Fatal(err)
	}
	if toRunning() {
		t.Error("an agent of a paused workflow moved to running")
	}
	if a, err := db.GetAgent(ctx, k); err != nil || a.State != contract.AgentIdle {
		t.Errorf("state = %s, %v; want idle", a.State, err)
	}
	if _, err := db.MoveWorkflowState(ctx, "w", "t", []contract.WorkflowState{contract.WorkflowPaused}, contract.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	if !toRunning() {
		t.Error("an agent of a running workflow did not move to running")
	}
}
