package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// task is a task of wf:main created by alice; tests change what they test.
func task(title string, change func(*NewTask)) NewTask {
	nt := NewTask{Workflow: "wf", Tag: "main", Title: title, CreatedBy: "alice"}
	if change != nil {
		change(&nt)
	}
	return nt
}

func mustCreate(t *testing.T, db *DB, nt NewTask) Task {
	t.Helper()
	tk, _, err := createTask(db, t.Context(), nt)
	if err != nil {
		t.Fatalf("CreateTask %q: %v", nt.Title, err)
	}
	return tk
}

func actor(name, run string) TaskActor {
	return TaskActor{AgentKey: AgentKey{Name: name, Workflow: "wf", Tag: "main"}, Run: run}
}

func mustClaim(t *testing.T, db *DB, a TaskActor, id string) Task {
	t.Helper()
	tk, err := db.ClaimTask(t.Context(), a, id)
	if err != nil {
		t.Fatalf("%s claims %q: %v", a.Name, id, err)
	}
	return tk
}

// readyOf is who each task of news.Ready wakes, by task id.
func readyOf(news TaskNews) map[string][]string {
	out := map[string][]string{}
	for _, r := range news.Ready {
		out[r.Task.ID] = r.Wake
	}
	return out
}

func stateOf(t *testing.T, db *DB, id string) Task {
	t.Helper()
	tk, _, err := db.GetTask(t.Context(), wfMain, id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// Ids count up across scopes and are never reused, like proposal ids.
func TestTaskIDsCountUpAcrossScopes(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	addMembers(t, db, Scope{"wf", "other"}, "alice")
	a := mustCreate(t, db, task("one", nil))
	b := mustCreate(t, db, task("two", func(nt *NewTask) { nt.Tag = "other" }))
	c := mustCreate(t, db, task("three", nil))
	if got := []string{a.ID, b.ID, c.ID}; !cmp.Equal(got, []string{"task-1", "task-2", "task-3"}) {
		t.Errorf("ids = %v", got)
	}
	if c.State != contract.TaskPending || c.CreatedBy != "alice" || c.MaxRetries != DefaultTaskRetries || !c.Ready() {
		t.Errorf("new task = %+v", c)
	}
	if _, _, err := db.GetTask(t.Context(), wfMain, "task-2"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("task-2 of wf:other read in wf:main: %v", err)
	}
	if found, _, err := db.GetTask(t.Context(), Scope{}, "2"); err != nil || found.Tag != "other" {
		t.Errorf("task 2 found without a scope = %+v, %v", found, err)
	}
}

// A claim without an id takes the best ready task: assigned to the caller
// first, then the highest priority, then the oldest; tasks still waiting
// for a dependency or assigned to others are skipped.
func TestClaimWithoutIDTakesTheBestReadyTask(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol")
	low := mustCreate(t, db, task("low", nil))
	first := mustCreate(t, db, task("high, older", func(nt *NewTask) { nt.Priority = 5 }))
	mustCreate(t, db, task("high, newer", func(nt *NewTask) { nt.Priority = 5 }))
	mustCreate(t, db, task("blocked", func(nt *NewTask) { nt.Priority = 9; nt.DependsOn = []string{low.ID} }))
	mustCreate(t, db, task("carol's", func(nt *NewTask) { nt.Priority = 9; nt.Assignee = "carol" }))
	mine := mustCreate(t, db, task("bob's", func(nt *NewTask) { nt.Assignee = "bob" }))

	var got []string
	for range 4 {
		got = append(got, mustClaim(t, db, actor("bob", ""), "").Title)
	}
	want := []string{mine.Title, first.Title, "high, newer", "low"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claim order (-want +got):\n%s", diff)
	}
	_, err := db.ClaimTask(t.Context(), actor("bob", ""), "")
	wantPropErr(t, err, contract.CodeNotFound, "no task is ready for you in @wf:main", "1 pending wait", "1 are assigned to others", "4 are held")
}

// Every claim that cannot be granted says why and what to do instead.
func TestClaimRefusals(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	dep := mustCreate(t, db, task("dep", nil))
	waiting := mustCreate(t, db, task("waits", func(nt *NewTask) { nt.DependsOn = []string{dep.ID} }))
	held := mustCreate(t, db, task("held", nil))
	mustClaim(t, db, actor("alice", ""), held.ID)
	mustClaim(t, db, actor("alice", ""), dep.ID)
	done := mustCreate(t, db, task("done", nil))
	mustClaim(t, db, actor("alice", ""), done.ID)
	if _, _, err := completeTask(db, t.Context(), actor("alice", ""), done.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	failed := mustCreate(t, db, task("failed", nil))
	mustClaim(t, db, actor("alice", ""), failed.ID)
	if _, _, err := failTask(db, t.Context(), actor("alice", ""), failed.ID, "no disk", false); err != nil {
		t.Fatal(err)
	}
	theirs := mustCreate(t, db, task("theirs", func(nt *NewTask) { nt.Assignee = "alice" }))

	for name, tc := range map[string]struct {
		id    string
		code  contract.Code
		parts []string
	}{
		"claimed by another": {held.ID, contract.CodeConflict, []string{held.ID + " is already claimed by alice"}},
		"dependency open":    {waiting.ID, contract.CodeConflict, []string{waiting.ID + " is not ready: it waits for " + dep.ID + " (claimed, held by alice)", "task_claim without an id"}},
		"completed":          {done.ID, contract.CodeConflict, []string{"already completed (by alice): claim another"}},
		"failed":             {failed.ID, contract.CodeConflict, []string{"failed (no disk)", "create a new task"}},
		"assigned elsewhere": {theirs.ID, contract.CodePermission, []string{"assigned to alice"}},
		"unknown":            {"task-99", contract.CodeNotFound, []string{"task task-99 not found in @wf:main: task_list (or `agent-worker tasks @wf:main`) shows its ids"}},
	} {
		_, err := db.ClaimTask(t.Context(), actor("bob", ""), tc.id)
		if contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: error %v, want code %s", name, err, tc.code)
			continue
		}
		wantErr(t, err, tc.parts...)
	}
	if _, err := db.ClaimTask(t.Context(), actor("zed", ""), ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("a claim by a non-member: %v", err)
	}
	// Claiming what one holds already renews it.
	if again := mustClaim(t, db, actor("alice", ""), held.ID); again.State != contract.TaskClaimed || again.Holder != "alice" {
		t.Errorf("alice claims her own task again: %+v", again)
	}
}

// Two agents racing for the same tasks never get the same one.
func TestConcurrentClaimsGetDifferentTasks(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "a", "b", "c", "d", "alice")
	const n = 40
	for i := range n {
		mustCreate(t, db, task(fmt.Sprint("t", i), nil))
	}
	var (
		mu  sync.Mutex
		got = map[string]string{}
		wg  sync.WaitGroup
	)
	for _, who := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			for {
				tk, err := db.ClaimTask(t.Context(), actor(who, ""), "")
				if contract.ErrorCode(err) == contract.CodeNotFound {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := got[tk.ID]; dup {
					t.Errorf("%s claimed by %s and %s", tk.ID, prev, who)
				}
				got[tk.ID] = who
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Errorf("%d tasks claimed, want %d", len(got), n)
	}
}

// depends_on and parent must name open tasks of the scope, and a new task
// may not end up waiting for itself; the error spells the cycle out.
func TestCreateTaskRefusals(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	epic := mustCreate(t, db, task("epic", nil))                                                                 // task-1
	api1 := mustCreate(t, db, task("api", func(nt *NewTask) { nt.Parent = epic.ID }))                            // task-2: epic waits for it
	docs := mustCreate(t, db, task("docs", func(nt *NewTask) { nt.DependsOn = []string{epic.ID} }))              // task-3 waits for epic
	mustCreate(t, db, task("review", func(nt *NewTask) { nt.DependsOn = []string{docs.ID, api1.ID, "task-2"} })) // task-4
	addMembers(t, db, Scope{"wf", "other"}, "alice")
	elsewhere := mustCreate(t, db, task("elsewhere", func(nt *NewTask) { nt.Tag = "other" }))

	for name, tc := range map[string]struct {
		nt    NewTask
		code  contract.Code
		parts []string
	}{
		"direct cycle": {task("x", func(nt *NewTask) { nt.Parent = epic.ID; nt.DependsOn = []string{epic.ID} }),
			contract.CodeInvalid, []string{"dependency cycle: new task → task-1 → new task"}},
		"cycle through a dependent": {task("x", func(nt *NewTask) { nt.Parent = epic.ID; nt.DependsOn = []string{"task-4"} }),
			contract.CodeInvalid, []string{"dependency cycle: new task → task-4 → task-3 → task-1 → new task", `→ means "waits for"`}},
		"unknown dependency": {task("x", func(nt *NewTask) { nt.DependsOn = []string{"task-1", "task-77", "78"} }),
			contract.CodeInvalid, []string{"depends_on: task-77, task-78 are not a task of @wf:main"}},
		"dependency in another scope": {task("x", func(nt *NewTask) { nt.DependsOn = []string{elsewhere.ID} }),
			contract.CodeInvalid, []string{elsewhere.ID + " is not a task of @wf:main"}},
		"unknown parent":   {task("x", func(nt *NewTask) { nt.Parent = "task-99" }), contract.CodeInvalid, []string{"parent: task-99 is not a task"}},
		"unknown assignee": {task("x", func(nt *NewTask) { nt.Assignee = "zed" }), contract.CodeInvalid, []string{"assignee: zed is not a member of @wf:main", "alice, bob"}},
		"creator outside":  {task("x", func(nt *NewTask) { nt.CreatedBy = "zed" }), contract.CodeInvalid, []string{"zed is not a member"}},
		"empty title":      {task("  ", nil), contract.CodeInvalid, []string{"title is empty"}},
		"two-line title":   {task("a\nb", nil), contract.CodeInvalid, []string{"more than one line"}},
		"long title":       {task(string(make([]rune, MaxTaskTitle+1)), nil), contract.CodeInvalid, []string{"title is 201 characters; the limit is 200"}},
		"NUL description":  {task("x", func(nt *NewTask) { nt.Description = "a\x00b" }), contract.CodeInvalid, []string{"description contains a NUL byte"}},
		"unknown workflow": {task("x", func(nt *NewTask) { nt.Workflow = "nope" }), contract.CodeNotFound, []string{`workflow "nope:main" not found`}},
		"too many deps":    {task("x", func(nt *NewTask) { nt.DependsOn = manyIDs(MaxTaskDeps + 1) }), contract.CodeInvalid, []string{"depends_on names 51 tasks; the limit is 50"}},
		"empty dependency": {task("x", func(nt *NewTask) { nt.DependsOn = []string{" "} }), contract.CodeInvalid, []string{"depends_on: an id is empty: name each task"}},
	} {
		_, _, err := createTask(db, t.Context(), tc.nt)
		if contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: error %v, want code %s", name, err, tc.code)
			continue
		}
		wantErr(t, err, tc.parts...)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM tasks`); n != 5 {
		t.Errorf("%d tasks after the refusals, want 5", n)
	}
}

// A parent waits for its subtasks: it cannot be claimed or completed while
// one is open, and the last subtask's completion says it is ready and
// wakes who may claim it.
func TestParentWaitsForItsSubtasks(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	epic := mustCreate(t, db, task("epic", func(nt *NewTask) { nt.Assignee = "alice" }))
	mustClaim(t, db, actor("alice", ""), epic.ID) // before it had subtasks
	sub := mustCreate(t, db, task("part", func(nt *NewTask) { nt.Parent = epic.ID }))
	_, _, err := completeTask(db, t.Context(), actor("alice", ""), epic.ID, "")
	wantPropErr(t, err, contract.CodeConflict, epic.ID+" has subtasks not completed yet: "+sub.ID+" (pending)")
	if _, _, err := releaseTask(db, t.Context(), actor("alice", ""), epic.ID); err != nil {
		t.Fatal(err)
	}
	_, err = db.ClaimTask(t.Context(), actor("alice", ""), epic.ID)
	wantPropErr(t, err, contract.CodeConflict, "waits for "+sub.ID+" (pending)")

	mustClaim(t, db, actor("bob", ""), sub.ID)
	_, news, err := completeTask(db, t.Context(), actor("bob", ""), sub.ID, "done")
	if err != nil {
		t.Fatal(err)
	}
	if news.Kind != TaskEventCompleted || news.By != "bob" || news.Task.ID != sub.ID {
		t.Errorf("news of the completion = %s %s by %s", news.Kind, news.Task.ID, news.By)
	}
	if diff := cmp.Diff(map[string][]string{"task-1": {"alice"}}, readyOf(news)); diff != "" {
		t.Errorf("ready after the last subtask's completion, and who they wake (-want +got):\n%s", diff)
	}
	mustClaim(t, db, actor("alice", ""), "")
}

// A task that becomes ready wakes its assignee, or the members free for
// work (idle or running, holding no task) but not whoever made it ready.
func TestReadyTasksWakeWhoMayClaimThem(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol", "dave")
	if err := db.SetAgentState(t.Context(), AgentKey{"dave", "wf", "main"}, contract.AgentPaused, ""); err != nil {
		t.Fatal(err)
	}
	created := map[string][]string{}
	create := func(nt NewTask) Task {
		t.Helper()
		tk, news, err := createTask(db, t.Context(), nt)
		if err != nil {
			t.Fatal(err)
		}
		if news.Kind != TaskEventCreated || news.Task.ID != tk.ID {
			t.Errorf("news of creating %s = %s %s", tk.ID, news.Kind, news.Task.ID)
		}
		if tk.Ready() {
			created[tk.ID] = news.Wake
		}
		return tk
	}
	busy := create(task("busy work", nil))
	mustClaim(t, db, actor("carol", ""), busy.ID)
	first := create(task("first", func(nt *NewTask) { nt.Priority = 3 }))
	create(task("second", func(nt *NewTask) { nt.DependsOn = []string{first.ID} }))
	create(task("for bob", func(nt *NewTask) { nt.DependsOn = []string{first.ID}; nt.Assignee = "bob" }))
	mustClaim(t, db, actor("bob", ""), first.ID)
	_, news, err := completeTask(db, t.Context(), actor("bob", ""), first.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	// alice created them all, so she is not woken by their creation.
	wantCreated := map[string][]string{"task-1": {"bob", "carol"}, "task-2": {"bob"}}
	if diff := cmp.Diff(wantCreated, created); diff != "" {
		t.Errorf("who the tasks ready at creation wake (-want +got):\n%s", diff)
	}
	wantReady := map[string][]string{"task-3": {"alice", "bob"}, "task-4": {"bob"}}
	if diff := cmp.Diff(wantReady, readyOf(news)); diff != "" {
		t.Errorf("who the tasks the completion made ready wake (-want +got):\n%s", diff)
	}
	// The lines the caller's Lines worded committed with each change.
	wantLines := []propLine{{Content: "created task-1"}, {Content: "created task-2"}, {Content: "created task-3"},
		{Content: "created task-4"}, {Content: "completed task-2"}}
	if diff := cmp.Diff(wantLines, systemLines(t, db, wfMain)); diff != "" {
		t.Errorf("lines written (-want +got):\n%s", diff)
	}
}

// Only the holder may act on a held task; the others hear who holds it.
func TestOnlyTheHolderActsOnATask(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	tk := mustCreate(t, db, task("mine", nil))
	pending := mustCreate(t, db, task("nobody's", nil))
	mustClaim(t, db, actor("alice", ""), tk.ID)
	ctx, bob := t.Context(), actor("bob", "")
	_, _, err := completeTask(db, ctx, bob, tk.ID, "")
	wantPropErr(t, err, contract.CodePermission, tk.ID+" is held by alice: only the holder may complete it")
	_, err = db.TaskProgress(ctx, bob, tk.ID, "half", nil)
	wantPropErr(t, err, contract.CodePermission, "held by alice")
	_, _, err = failTask(db, ctx, bob, tk.ID, "no", false)
	wantPropErr(t, err, contract.CodePermission, "held by alice")
	_, _, err = releaseTask(db, ctx, bob, tk.ID)
	wantPropErr(t, err, contract.CodePermission, "held by alice")
	_, _, err = completeTask(db, ctx, bob, pending.ID, "")
	wantPropErr(t, err, contract.CodeConflict, "is pending, not held by anyone: claim it with task_claim first")
	if got := stateOf(t, db, tk.ID); got.State != contract.TaskClaimed || got.Holder != "alice" {
		t.Errorf("after the refusals: %+v", got)
	}

	// The holder's progress moves it to in_progress and is kept in its history.
	half := 50
	got, err := db.TaskProgress(ctx, actor("alice", ""), tk.ID, "parser done", &half)
	if err != nil || got.State != contract.TaskInProgress || got.Percent == nil || *got.Percent != 50 {
		t.Fatalf("progress = %+v, %v", got, err)
	}
	bad := 101
	_, err = db.TaskProgress(ctx, actor("alice", ""), tk.ID, "more", &bad)
	wantPropErr(t, err, contract.CodeInvalid, "percent 101 is out of range")
	if _, _, err := completeTask(db, ctx, actor("alice", ""), tk.ID, "shipped"); err != nil {
		t.Fatal(err)
	}
	done, history, err := db.GetTask(ctx, wfMain, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != contract.TaskCompleted || done.Holder != "alice" || done.Result != "shipped" || done.HolderRun != "" || !done.LeaseExpiresAt.IsZero() {
		t.Errorf("completed task = %+v", done)
	}
	var kinds []string
	for _, e := range history {
		kinds = append(kinds, fmt.Sprintf("%s %s %s %q", e.Actor, e.Kind, e.State, e.Note))
	}
	want := []string{`alice created pending ""`, `alice claimed claimed ""`, `alice progress in_progress "parser done"`, `alice completed completed "shipped"`}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// task_fail with retry sends the task back while retries remain, then it
// fails for good and the tasks waiting for it are named.
func TestFailWithRetryUntilRetriesRunOut(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	tk := mustCreate(t, db, task("flaky", nil))
	mustCreate(t, db, task("after", func(nt *NewTask) { nt.DependsOn = []string{tk.ID} }))
	var facts []string
	for i := range DefaultTaskRetries + 1 {
		mustClaim(t, db, actor("bob", ""), tk.ID)
		got, news, err := failTask(db, t.Context(), actor("bob", ""), tk.ID, fmt.Sprint("timeout ", i), true)
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, fmt.Sprintf("%s %s by %s (%s, retry %v, %d of %d): wakes %v, blocks %v", news.Task.ID, news.Kind, news.By,
			news.Reason, news.Retry, news.Task.Retries, news.Task.MaxRetries, news.Wake, news.Blocked))
		if i < DefaultTaskRetries && (got.State != contract.TaskPending || got.Retries != i+1) {
			t.Errorf("after failure %d: %+v", i, got)
		}
		if i == DefaultTaskRetries && (got.State != contract.TaskFailed || got.Error != "timeout 2") {
			t.Errorf("after the last failure: %+v", got)
		}
	}
	want := []string{
		`task-1 retried by bob (timeout 0, retry true, 1 of 2): wakes [alice], blocks []`,
		`task-1 retried by bob (timeout 1, retry true, 2 of 2): wakes [alice], blocks []`,
		`task-1 failed by bob (timeout 2, retry true, 2 of 2): wakes [], blocks [task-2]`,
	}
	if diff := cmp.Diff(want, facts); diff != "" {
		t.Errorf("news (-want +got):\n%s", diff)
	}
	_, _, err := failTask(db, t.Context(), actor("bob", ""), tk.ID, "again", true)
	wantPropErr(t, err, contract.CodeConflict, "has already failed (timeout 2): create a new task")
}

// A lease is lost when its run ends, when it expires, or when its holder
// leaves; the task goes back to pending with a line that says why and
// wakes the others free for work (never the agent that lost it), and its
// retries are unchanged. A run's heartbeat keeps its leases alive.
func TestLostLeasesGoBackToPending(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol", "outsider")
	ctx := t.Context()
	for _, r := range []Run{{ID: "run_a", Agent: AgentKey{"alice", "wf", "main"}}, {ID: "run_b", Agent: AgentKey{"bob", "wf", "main"}}} {
		if _, err := db.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := db.AddWorker(ctx, Worker{RunID: r.ID, PID: 10, PGID: 10, PluginPath: "/p/mock"}); err != nil {
			t.Fatal(err)
		}
	}
	ended := mustCreate(t, db, task("of a dead run", nil))
	alive := mustCreate(t, db, task("of a live run", nil))
	outside := mustCreate(t, db, task("of an outside agent", nil))
	leaver := mustCreate(t, db, task("of a leaver", nil))
	mustClaim(t, db, actor("alice", "run_a"), ended.ID)
	mustClaim(t, db, actor("bob", "run_b"), alive.ID)
	mustClaim(t, db, actor("outsider", ""), outside.ID)
	mustClaim(t, db, actor("carol", ""), leaver.ID)

	if lost, next, err := returnLostTasks(db, ctx); err != nil || len(lost) != 0 || !next.Equal(propT0.Add(TaskLease)) {
		t.Fatalf("nothing is lost yet: %v, %v; next expiry %v, want %v", lost, err, next, propT0.Add(TaskLease))
	}
	if err := db.FinishRun(ctx, "run_a", contract.RunFailed, "killed by signal SIGKILL", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAgent(ctx, AgentKey{"carol", "wf", "main"}); err != nil {
		t.Fatal(err)
	}
	lost, next, err := returnLostTasks(db, ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`task-1 returned, lost by alice: alice's run run_a ended (failed: killed by signal SIGKILL) without completing or releasing it; wakes []`,
		`task-4 returned, lost by carol: carol is no longer a member of @wf:main; wakes [alice]`,
	}
	if diff := cmp.Diff(want, lossesOf(lost)); diff != "" {
		t.Errorf("lost tasks (-want +got):\n%s", diff)
	}
	if !next.Equal(propT0.Add(TaskLease)) {
		t.Errorf("next expiry after the sweep = %v, want %v", next, propT0.Add(TaskLease))
	}
	if got := stateOf(t, db, ended.ID); got.State != contract.TaskPending || got.Holder != "" || got.Retries != 0 {
		t.Errorf("returned task = %+v", got)
	}

	// Past the lease: the live run's heartbeat renewed its lease, the
	// outside agent's tool calls renewed nothing, so only its task goes.
	clk.Set(propT0.Add(TaskLease - time.Second))
	if err := db.Heartbeat(ctx, "run_b"); err != nil {
		t.Fatal(err)
	}
	clk.Set(propT0.Add(TaskLease + time.Second))
	lost, next, err = returnLostTasks(db, ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What is left held is the live run's renewed lease.
	if !next.Equal(propT0.Add(2*TaskLease - time.Second)) {
		t.Errorf("next expiry after the sweep = %v, want %v", next, propT0.Add(2*TaskLease-time.Second))
	}
	if got := lossesOf(lost); len(got) != 1 || !strings.HasPrefix(got[0], `task-3 returned, lost by outsider: outsider's lease expired (no sign of life for 10m0s); wakes`) {
		t.Errorf("expired leases = %q", got)
	}
	if got := stateOf(t, db, alive.ID); got.State != contract.TaskClaimed || !got.LeaseExpiresAt.Equal(propT0.Add(2*TaskLease-time.Second)) {
		t.Errorf("the live run's task = %+v", got)
	}

	// An outside agent's tool calls renew its own leases.
	mustClaim(t, db, actor("outsider", ""), outside.ID)
	clk.Set(propT0.Add(2*TaskLease + time.Second))
	if err := db.RenewAgentLeases(ctx, AgentKey{"outsider", "wf", "main"}); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, db, outside.ID); !got.LeaseExpiresAt.Equal(propT0.Add(3*TaskLease + time.Second)) {
		t.Errorf("renewed outside lease expires %v", got.LeaseExpiresAt)
	}

	// A run that has ended cannot claim.
	_, err = db.ClaimTask(ctx, actor("alice", "run_a"), "")
	wantPropErr(t, err, contract.CodeConflict, "your run run_a has ended")
}

// lossesOf says which task each lost lease returned, why, and who it wakes.
func lossesOf(news []TaskNews) []string {
	var out []string
	for _, n := range news {
		out = append(out, fmt.Sprintf("%s %s, lost by %s: %s; wakes %v", n.Task.ID, n.Kind, n.By, n.Reason, n.Wake))
	}
	return out
}

func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint("task-", i+1)
	}
	return ids
}
