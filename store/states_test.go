package store

import (
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// A state move happens only from the states it names, so the end of a
// run (running → idle) never overwrites a pause that landed during it.
func TestMoveAgentState(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	k := AgentKey{Name: "a", Workflow: "w", Tag: "t"}
	if _, err := db.CreateAgent(ctx, Agent{Name: "a", Workflow: "w", Tag: "t", State: api.AgentRunning}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetAgentState(ctx, k, api.AgentPaused, ""); err != nil {
		t.Fatal(err)
	}
	moved, err := db.MoveAgentState(ctx, k, []api.AgentState{api.AgentRunning}, api.AgentIdle, "")
	if err != nil || moved {
		t.Errorf("running → idle of a paused agent: moved %v, %v", moved, err)
	}
	if a, err := db.GetAgent(ctx, k); err != nil || a.State != api.AgentPaused {
		t.Errorf("state = %s, %v; want paused", a.State, err)
	}
	moved, err = db.MoveAgentState(ctx, k, []api.AgentState{api.AgentPaused, api.AgentFailed}, api.AgentIdle, "")
	if err != nil || !moved {
		t.Errorf("paused → idle: moved %v, %v", moved, err)
	}
	if moved, err := db.MoveAgentState(ctx, k, nil, api.AgentIdle, ""); err != nil || moved {
		t.Errorf("a move from no state: moved %v, %v", moved, err)
	}
	if _, err := db.MoveAgentState(ctx, AgentKey{Name: "x", Workflow: "w", Tag: "t"}, []api.AgentState{api.AgentIdle}, api.AgentPaused, ""); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("move of a missing agent: %v", err)
	}
	if _, err := db.MoveAgentState(ctx, k, []api.AgentState{api.AgentIdle}, "sleepy", ""); api.ErrorCode(err) != api.CodeInvalid {
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
	from := []api.WorkflowState{api.WorkflowRunning}
	if moved, err := db.MoveWorkflowState(ctx, "w", "t", from, api.WorkflowPaused, ""); err != nil || !moved {
		t.Errorf("running → paused: moved %v, %v", moved, err)
	}
	if moved, err := db.MoveWorkflowState(ctx, "w", "t", from, api.WorkflowPaused, ""); err != nil || moved {
		t.Errorf("running → paused of a paused workflow: moved %v, %v", moved, err)
	}
	if w, err := db.GetWorkflow(ctx, "w", "t"); err != nil || w.State != api.WorkflowPaused {
		t.Errorf("state = %s, %v; want paused", w.State, err)
	}
	if _, err := db.MoveWorkflowState(ctx, "nope", "t", from, api.WorkflowPaused, ""); api.ErrorCode(err) != api.CodeNotFound {
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
		moved, err := db.MoveAgentState(ctx, k, []api.AgentState{api.AgentIdle}, api.AgentRunning, "")
		if err != nil {
			t.Fatal(err)
		}
		return moved
	}
	if _, err := db.MoveWorkflowState(ctx, "w", "t", []api.WorkflowState{api.WorkflowRunning}, api.WorkflowPaused, ""); err != nil {
		t.Fatal(err)
	}
	if toRunning() {
		t.Error("an agent of a paused workflow moved to running")
	}
	if a, err := db.GetAgent(ctx, k); err != nil || a.State != api.AgentIdle {
		t.Errorf("state = %s, %v; want idle", a.State, err)
	}
	if _, err := db.MoveWorkflowState(ctx, "w", "t", []api.WorkflowState{api.WorkflowPaused}, api.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	if !toRunning() {
		t.Error("an agent of a running workflow did not move to running")
	}
}
