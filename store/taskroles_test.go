package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// giveRoles sets the roles of members of wf:main.
func giveRoles(t *testing.T, db *DB, roles map[string][]string) {
	t.Helper()
	for name, rs := range roles {
		a, err := db.GetAgent(t.Context(), AgentKey{Name: name, Workflow: "wf", Tag: "main"})
		if err != nil {
			t.Fatal(err)
		}
		a.Roles = rs
		if err := db.UpdateAgent(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
}

// A task with a role goes only to an agent with that role, and comes
// before the tasks open to anyone; a task without one goes to anyone.
func TestTaskRolesRouteClaims(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "rev", "dev")
	giveRoles(t, db, map[string][]string{"rev": {"reviewer"}, "dev": {"coder", "coder"}})
	if a, _ := db.GetAgent(t.Context(), AgentKey{Name: "dev", Workflow: "wf", Tag: "main"}); !cmp.Equal(a.Roles, []string{"coder"}) {
		t.Errorf("dev's roles = %q, want [coder] (repeats dropped)", a.Roles)
	}
	anyone := mustCreate(t, db, task("anyone", func(nt *NewTask) { nt.Priority = 5 }))
	review := mustCreate(t, db, task("review", func(nt *NewTask) { nt.Role = "reviewer" }))
	code := mustCreate(t, db, task("code", func(nt *NewTask) { nt.Role = "coder" }))

	if got := mustClaim(t, db, actor("rev", ""), ""); got.ID != review.ID {
		t.Errorf("rev claimed %s %q, want its role's task %s first", got.ID, got.Title, review.ID)
	}
	_, err := db.ClaimTask(t.Context(), actor("alice", ""), code.ID)
	wantPropErr(t, err, contract.CodePermission, code.ID+" is for the role coder, which you do not have (yours: none)")
	if got := mustClaim(t, db, actor("alice", ""), ""); got.ID != anyone.ID {
		t.Errorf("alice claimed %s, want %s, the one task without a role", got.ID, anyone.ID)
	}
	_, err = db.ClaimTask(t.Context(), actor("alice", ""), "")
	wantPropErr(t, err, contract.CodeNotFound, "1 are for a role you do not have (yours: none)")
	if got := mustClaim(t, db, actor("dev", ""), ""); got.ID != code.ID {
		t.Errorf("dev claimed %s, want %s", got.ID, code.ID)
	}
}

// A ready task with a role wakes only the free members with that role;
// my_tasks lists what an agent holds and may claim, and renews its leases.
func TestTaskRoleWakesAndMyTasks(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "rev", "rev2", "dev")
	giveRoles(t, db, map[string][]string{"rev": {"reviewer"}, "rev2": {"reviewer"}})
	_, news, err := createTask(db, t.Context(), task("review", func(nt *NewTask) { nt.Role = "reviewer" }))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rev", "rev2"}, news.Wake); diff != "" {
		t.Errorf("a reviewer's task wakes (-want +got):\n%s", diff)
	}
	held := mustCreate(t, db, task("held", nil))
	mustClaim(t, db, actor("rev", ""), held.ID)
	mustCreate(t, db, task("other", func(nt *NewTask) { nt.Role = "coder" }))
	clk.Set(clk.Now().Add(TaskLease / 2))
	h, c, roles, err := db.MyTasks(t.Context(), actor("rev", ""))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ts []Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{held.ID}, ids(h)); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"task-1"}, ids(c)); diff != "" {
		t.Errorf("claimable: the reviewer's task, not the coder's (-want +got):\n%s", diff)
	}
	if !cmp.Equal(roles, []string{"reviewer"}) {
		t.Errorf("roles = %q", roles)
	}
	if want := clk.Now().Add(TaskLease); !h[0].LeaseExpiresAt.Equal(want) {
		t.Errorf("lease after my_tasks expires at %s, want %s (renewed)", h[0].LeaseExpiresAt, want)
	}
}

// Status warns of a role that open tasks ask for and no agent has.
func TestRoleGaps(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "rev")
	giveRoles(t, db, map[string][]string{"rev": {"reviewer"}})
	mustCreate(t, db, task("review", func(nt *NewTask) { nt.Role = "reviewer" }))
	mustCreate(t, db, task("deploy", func(nt *NewTask) { nt.Role = "ops" }))
	mustCreate(t, db, task("deploy again", func(nt *NewTask) { nt.Role = "ops" }))
	gaps, err := db.RoleGaps(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []RoleGap{{Scope: wfMain, Role: "ops", Tasks: []string{"task-2", "task-3"}}}
	if diff := cmp.Diff(want, gaps); diff != "" {
		t.Errorf("role gaps (-want +got):\n%s", diff)
	}
	_, _, err = createTask(db, t.Context(), task("bad", func(nt *NewTask) { nt.Role = "Ops!" }))
	wantPropErr(t, err, contract.CodeInvalid, `role: role "Ops!": use a lowercase letter first`)
}

// Cancelling a task cancels its open subtasks at any depth, tells who
// held them and who is behind the tasks that waited for them, and leaves
// the rest alone; a completed task cannot be cancelled, and nothing is
// written then.
func TestCancelTaskCascades(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol", "dave")
	parent := mustCreate(t, db, task("parent", nil))
	sub := mustCreate(t, db, task("sub", func(nt *NewTask) { nt.Parent = parent.ID }))
	subsub := mustCreate(t, db, task("subsub", func(nt *NewTask) { nt.Parent = sub.ID }))
	done := mustCreate(t, db, task("done sub", func(nt *NewTask) { nt.Parent = parent.ID }))
	mustClaim(t, db, actor("carol", ""), done.ID)
	if _, _, err := completeTask(db, t.Context(), actor("carol", ""), done.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, db, actor("bob", ""), subsub.ID)
	after := mustCreate(t, db, task("after", func(nt *NewTask) { nt.DependsOn = []string{parent.ID}; nt.Assignee = "dave" }))

	var h heard
	got, _, err := db.CancelTask(t.Context(), wfMain, "user", parent.ID, "plan changed", &h)
	if err != nil {
		t.Fatal(err)
	}
	news := h.task(nil)
	if got.State != contract.TaskCancelled || got.Error != "plan changed" {
		t.Errorf("cancelled task = %s %q", got.State, got.Error)
	}
	var cancelled []string
	for _, c := range news.Cancelled {
		cancelled = append(cancelled, c.ID)
	}
	if diff := cmp.Diff([]string{sub.ID, subsub.ID}, cancelled); diff != "" {
		t.Errorf("cancelled with it (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{after.ID}, news.Blocked); diff != "" {
		t.Errorf("blocked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bob", "dave"}, news.Tell); diff != "" {
		t.Errorf("told: the holder of a cancelled subtask and the assignee of a dependent (-want +got):\n%s", diff)
	}
	for id, want := range map[string]contract.TaskState{sub.ID: contract.TaskCancelled, subsub.ID: contract.TaskCancelled,
		done.ID: contract.TaskCompleted, after.ID: contract.TaskPending} {
		if s := stateOf(t, db, id); s.State != want {
			t.Errorf("%s is %s, want %s", id, s.State, want)
		}
	}
	// The holder of a cancelled task hears so when it acts on it.
	_, err = db.TaskProgress(t.Context(), actor("bob", ""), subsub.ID, "still going", nil)
	wantPropErr(t, err, contract.CodeConflict, subsub.ID+" was cancelled (plan changed): stop working on it")

	// A completed task cannot be cancelled, and nothing is written.
	before, hist, _ := db.GetTask(t.Context(), wfMain, done.ID)
	var h2 heard
	_, msgs, err := db.CancelTask(t.Context(), wfMain, "alice", done.ID, "no", &h2)
	wantPropErr(t, err, contract.CodeConflict, done.ID+" is already completed (by carol), so it cannot be cancelled")
	afterT, hist2, _ := db.GetTask(t.Context(), wfMain, done.ID)
	if len(msgs) != 0 || len(h2.tasks) != 0 || !cmp.Equal(before, afterT) || len(hist) != len(hist2) {
		t.Errorf("a refused cancel wrote something: %d lines, task %+v, history %d → %d", len(msgs), afterT, len(hist), len(hist2))
	}
	_, _, err = db.CancelTask(t.Context(), wfMain, "alice", sub.ID, "again", nil)
	wantPropErr(t, err, contract.CodeConflict, sub.ID+" is already cancelled")
	_, _, err = db.CancelTask(t.Context(), wfMain, "alice", sub.ID, " ", nil)
	wantPropErr(t, err, contract.CodeInvalid, "reason is empty")
}

// A cancelled subtask no longer holds its parent: the parent is ready.
func TestCancelledSubtaskFreesItsParent(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	parent := mustCreate(t, db, task("parent", nil))
	sub := mustCreate(t, db, task("sub", func(nt *NewTask) { nt.Parent = parent.ID }))
	var h heard
	if _, _, err := db.CancelTask(t.Context(), wfMain, "alice", sub.ID, "not needed", &h); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{parent.ID: {"alice", "bob"}}, readyOf(h.task(nil))); diff != "" {
		t.Errorf("ready after the cancel (-want +got):\n%s", diff)
	}
	if got := mustClaim(t, db, actor("bob", ""), ""); got.ID != parent.ID {
		t.Errorf("bob claimed %s, want the parent %s", got.ID, parent.ID)
	}
}

// A completion keeps its artifacts, cleaned; paths that leave the
// working directory are refused and nothing is written.
func TestCompleteTaskKeepsArtifacts(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	tk := mustCreate(t, db, task("report", nil))
	mustClaim(t, db, actor("bob", ""), tk.ID)
	for name, paths := range map[string][]string{
		"absolute":  {"/etc/passwd"},
		"traversal": {"docs/../../secret"},
		"empty":     {""},
	} {
		if _, _, err := db.CompleteTask(t.Context(), actor("bob", ""), tk.ID, "done", paths, nil); contract.ErrorCode(err) != contract.CodeInvalid {
			t.Errorf("%s %q: error %v, want invalid", name, paths, err)
		}
	}
	if s := stateOf(t, db, tk.ID); s.State != contract.TaskClaimed {
		t.Errorf("after refused completions the task is %s, want still claimed", s.State)
	}
	got, _, err := db.CompleteTask(t.Context(), actor("bob", ""), tk.ID, "done", []string{"docs/report.md", "./docs/report.md", "out/a.txt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docs/report.md", "out/a.txt"}
	if diff := cmp.Diff(want, got.Artifacts); diff != "" {
		t.Errorf("artifacts returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, stateOf(t, db, tk.ID).Artifacts); diff != "" {
		t.Errorf("artifacts stored (-want +got):\n%s", diff)
	}
}
