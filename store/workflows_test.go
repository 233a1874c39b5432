package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agent-worker/agent-worker/host/contract"
)

func TestWorkflows(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()

	in := Workflow{Name: "review", Tag: "pr-1", SourcePath: "/src/review.yaml", ConfigYAML: "agents: {}\n",
		Workdir: "/src", DocsOwner: "alice", LongMessageChars: 2000, WorkspaceRepo: "/src", WorkspaceBase: "main"}
	created, err := db.CreateWorkflow(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.State = "running" // no provider named: the daemon's default
	if diff := cmp.Diff(want, created, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Workflow{}, "CreatedAt", "UpdatedAt", "StartedAt")); diff != "" {
		t.Errorf("CreateWorkflow (-want +got):\n%s", diff)
	}
	if _, err := db.CreateWorkflow(ctx, in); contract.ErrorCode(err) != contract.CodeConflict {
		t.Errorf("second CreateWorkflow: %v, want conflict", err)
	}
	if _, err := db.CreateWorkflow(ctx, Workflow{Name: "x"}); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("CreateWorkflow without tag: %v, want invalid", err)
	}

	if err := db.SetWorkflowState(ctx, "review", "pr-1", "failed", "line 3: bad key"); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetWorkflow(ctx, "review", "pr-1")
	if err != nil || got.State != "failed" || got.Error != "line 3: bad key" {
		t.Errorf("after SetWorkflowState: %+v, %v", got, err)
	}
	if err := db.SetWorkflowState(ctx, "review", "pr-1", "dancing", ""); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("unknown state: %v, want invalid", err)
	}
	if err := db.SetWorkflowState(ctx, "nope", "t", "stopped", ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("missing workflow: %v, want not found", err)
	}

	ws, err := db.ListWorkflows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range ws {
		ids = append(ids, workflowID(w.Name, w.Tag))
	}
	if diff := cmp.Diff([]string{"global:main", "review:pr-1"}, ids); diff != "" {
		t.Errorf("ListWorkflows (-want +got):\n%s", diff)
	}
}

func TestDeleteWorkflow(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	for _, k := range []AgentKey{{"a", "review", "pr-1"}, {"b", "review", "pr-1"}, {"a", "review", "pr-2"}, {"g", "global", "main"}} {
		if _, err := db.CreateAgent(ctx, Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag}); err != nil {
			t.Fatal(err)
		}
	}
	addMessage(t, db, "m1", "review", "pr-1", "a", "b")
	mustExec(t, db, `INSERT INTO inbox_ack (workflow, tag, agent, cursor, updated_at) VALUES ('review', 'pr-1', 'a', 1, 0)`)

	if err := db.DeleteWorkflow(ctx, "review", "pr-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetWorkflow(ctx, "review", "pr-1"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("GetWorkflow after delete: %v, want not found", err)
	}
	as, err := db.ListAgents(ctx, AgentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var left []AgentKey
	for _, a := range as {
		left = append(left, a.Key())
	}
	if diff := cmp.Diff([]AgentKey{{"g", "global", "main"}, {"a", "review", "pr-2"}}, left); diff != "" {
		t.Errorf("agents after DeleteWorkflow (-want +got):\n%s", diff)
	}
	for _, table := range []string{"messages", "message_recipients", "inbox_ack"} {
		if n := queryInt(t, db, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%s keeps %d rows of the deleted workflow", table, n)
		}
	}

	if err := db.DeleteWorkflow(ctx, "review", "pr-1"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("second DeleteWorkflow: %v, want not found", err)
	}
	if err := db.DeleteWorkflow(ctx, "global", "main"); contract.ErrorCode(err) != contract.CodeInvalid {
		t.Errorf("DeleteWorkflow(global:main): %v, want invalid", err)
	}
	if _, err := db.GetWorkflow(ctx, "global", "main"); err != nil {
		t.Errorf("global:main is gone: %v", err)
	}
}

func TestSaveWorkflowAndUpdateAgent(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	w := Workflow{Name: "review", Tag: "pr-1", SourcePath: "/a/review.yaml", Params: map[string]string{"pr": "7"}, Vars: map[string]string{"sha": "abc"}}
	if _, err := db.SaveWorkflow(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.State, w.DocsOwner, w.Params = "stopped", "lead", map[string]string{"pr": "8"}
	w.WorkspaceRepo, w.WorkspaceBase = "/a", "dev"
	w.Repos = []WorkspaceRepo{{Name: "lib", Path: "/lib"}, {Name: "app", Path: "/app", Write: true, Git: true, Top: "/app", Base: "main"}}
	got, err := db.SaveWorkflow(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "stopped" || got.DocsOwner != "lead" || got.Params["pr"] != "8" || got.Vars["sha"] != "abc" ||
		got.WorkspaceRepo != "/a" || got.WorkspaceBase != "dev" || !slices.Equal(got.Repos, w.Repos) || got.Repo("app").Base != "main" {
		t.Errorf("after the second save: %+v", got)
	}
	w.Repos = nil
	if got, err := db.SaveWorkflow(ctx, w); err != nil || got.Repos != nil {
		t.Errorf("repos removed by a reload: %+v, %v", got.Repos, err)
	}
	if _, err := db.CreateAgent(ctx, Agent{Name: "a", Workflow: "review", Tag: "pr-1", Backend: "mock", System: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateAgent(ctx, Agent{Name: "a", Workflow: "review", Tag: "pr-1", Backend: "mock", System: "new", State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	a, err := db.GetAgent(ctx, AgentKey{Name: "a", Workflow: "review", Tag: "pr-1"})
	if err != nil || a.System != "new" || a.State != "stopped" {
		t.Errorf("after UpdateAgent: %+v, %v", a, err)
	}
	if err := db.UpdateAgent(ctx, Agent{Name: "zz", Workflow: "review", Tag: "pr-1"}); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("UpdateAgent of a missing agent: %v", err)
	}
}

// An edit that waits for its owner is kept beside the config that runs,
// read back with its reasons, and dropped when a config is saved or the
// wait is cleared.
func TestWorkflowPending(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.CreateWorkflow(ctx, Workflow{Name: "crew", Tag: "main", ConfigYAML: "v1"}); err != nil {
		t.Fatal(err)
	}
	reasons := []string{"agent a: sandbox mode off: its runs are not confined", "agent a: sandbox write adds /opt"}
	if err := db.SetWorkflowPending(ctx, "crew", "main", "v2", reasons); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetWorkflow(ctx, "crew", "main")
	if err != nil || got.ConfigYAML != "v1" || got.PendingYAML != "v2" || !cmp.Equal(got.PendingReasons, reasons) || got.PendingAt.IsZero() {
		t.Errorf("after SetWorkflowPending: config %q, pending %q %q at %v, %v; want v1 running and v2 waiting", got.ConfigYAML, got.PendingYAML, got.PendingReasons, got.PendingAt, err)
	}
	all, err := db.ListWorkflows(ctx)
	if err != nil || len(all) != 2 || all[0].PendingYAML != "v2" { // crew, global
		t.Errorf("ListWorkflows = %+v, %v; want crew's pending edit", all, err)
	}
	if err := db.SetWorkflowPending(ctx, "crew", "main", "", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetWorkflow(ctx, "crew", "main"); got.PendingYAML != "" || got.PendingReasons != nil || !got.PendingAt.IsZero() {
		t.Errorf("after clearing: %q %q %v; want nothing waiting", got.PendingYAML, got.PendingReasons, got.PendingAt)
	}
	if err := db.SetWorkflowPending(ctx, "crew", "main", "v2", reasons); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "crew", Tag: "main", ConfigYAML: "v2"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetWorkflow(ctx, "crew", "main"); got.ConfigYAML != "v2" || got.PendingYAML != "" {
		t.Errorf("after SaveWorkflow: config %q, pending %q; want v2 running, nothing waiting", got.ConfigYAML, got.PendingYAML)
	}
	if err := db.SetWorkflowPending(ctx, "nope", "main", "v", nil); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("SetWorkflowPending of no workflow: %v, want not found", err)
	}
}
