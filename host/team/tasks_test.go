package team

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// The board's lines as the team hears them: the store decides what a
// change did, Lines words these lines, the store writes them with the
// change and the service announces them, which wakes who they mention.
// The expected lines are the ones the board has always posted.

var board = store.Scope{Workflow: "wf", Tag: "main"}

// boardClock is a settable clock for the store, so leases expire on cue.
type boardClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *boardClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *boardClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// boardT0 is the board tests' start, on the millisecond the store keeps.
var boardT0 = time.UnixMilli(1_800_000_000_000)

// boardTeam is a service over a fresh store whose wf:main has members.
func boardTeam(t *testing.T, members ...string) (*Service, *store.DB, *boardClock) {
	t.Helper()
	clk := &boardClock{t: boardT0}
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "aw.db"), store.Options{PoolSize: 4, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, n := range members {
		if _, err := db.CreateAgent(t.Context(), store.Agent{Name: n, Workflow: board.Workflow, Tag: board.Tag, Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	return New(Config{DB: db}), db, clk
}

func boardTask(title string, change func(*store.NewTask)) store.NewTask {
	nt := store.NewTask{Workflow: board.Workflow, Tag: board.Tag, Title: title, CreatedBy: "alice"}
	if change != nil {
		change(&nt)
	}
	return nt
}

func boardActor(name, run string) store.TaskActor {
	return store.TaskActor{AgentKey: store.AgentKey{Name: name, Workflow: board.Workflow, Tag: board.Tag}, Run: run}
}

// boardLine is a system line and the inboxes it reached.
type boardLine struct {
	Content string
	Inbox   []string
}

// systemLines reads the system lines of the board's channel, oldest first.
func systemLines(t *testing.T, db *store.DB) []boardLine {
	t.Helper()
	ms, err := db.ReadChannel(t.Context(), board, store.ReadOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ms, func(a, b store.Message) int { return int(a.Seq - b.Seq) })
	var ls []boardLine
	for _, m := range ms {
		if m.Sender != SenderSystem || m.Kind != store.KindSystem {
			continue
		}
		inbox := slices.Clone(m.Recipients)
		slices.Sort(inbox)
		if len(inbox) == 0 {
			inbox = nil
		}
		ls = append(ls, boardLine{m.Content, inbox})
	}
	return ls
}

// woken drains the wakes published on sub so far (Announce publishes
// before the service call returns), in order.
func woken(sub *Subscription) []string {
	var names []string
	for {
		select {
		case ev := <-sub.C:
			if ev.Kind == EventWake {
				names = append(names, ev.Agent.Name)
			}
		default:
			return names
		}
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// A task that becomes ready wakes its assignee, or the members free for
// work (idle or running, holding no task) but not whoever made it ready;
// a completion is told, and the tasks it made ready wake who may claim them.
func TestBoardLinesWakeWhoMayClaimAReadyTask(t *testing.T) {
	t.Parallel()
	s, db, _ := boardTeam(t, "alice", "bob", "carol", "dave")
	ctx := t.Context()
	if err := db.SetAgentState(ctx, store.AgentKey{Name: "dave", Workflow: "wf", Tag: "main"}, api.AgentPaused, ""); err != nil {
		t.Fatal(err)
	}
	sub := s.Bus.Subscribe(100)
	defer sub.Close()
	task := must[store.Task](t)
	busy := task(s.CreateTask(ctx, boardTask("busy work", nil)))
	task(s.ClaimTask(ctx, boardActor("carol", ""), busy.ID))
	first := task(s.CreateTask(ctx, boardTask("first", func(nt *store.NewTask) { nt.Priority = 3 })))
	task(s.CreateTask(ctx, boardTask("second", func(nt *store.NewTask) { nt.DependsOn = []string{first.ID} })))
	task(s.CreateTask(ctx, boardTask("for bob", func(nt *store.NewTask) { nt.DependsOn = []string{first.ID}; nt.Assignee = "bob" })))
	task(s.ClaimTask(ctx, boardActor("bob", ""), first.ID))
	task(s.CompleteTask(ctx, boardActor("bob", ""), first.ID, "", nil))

	want := []boardLine{
		{Content: `@bob @carol task-1 "busy work" is ready: claim it with task_claim("task-1").`, Inbox: []string{"bob", "carol"}},
		{Content: `@bob task-2 "first" is ready (priority 3): claim it with task_claim("task-2").`, Inbox: []string{"bob"}},
		{Content: "task-2 completed by bob: first"},
		{Content: `@alice @bob task-3 "second" is ready: claim it with task_claim("task-3").`, Inbox: []string{"alice", "bob"}},
		{Content: `@bob task-4 "for bob" is ready for bob: claim it with task_claim("task-4").`, Inbox: []string{"bob"}},
	}
	if diff := cmp.Diff(want, systemLines(t, db)); diff != "" {
		t.Errorf("board lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bob", "carol", "bob", "alice", "bob", "bob"}, woken(sub)); diff != "" {
		t.Errorf("agents woken (-want +got):\n%s", diff)
	}
}

// The last subtask's completion tells that its parent is ready, to the
// parent's assignee.
func TestBoardLinesTellAParentReadyAfterItsLastSubtask(t *testing.T) {
	t.Parallel()
	s, db, _ := boardTeam(t, "alice", "bob")
	ctx := t.Context()
	task := must[store.Task](t)
	epic := task(s.CreateTask(ctx, boardTask("epic", func(nt *store.NewTask) { nt.Assignee = "alice" })))
	task(s.ClaimTask(ctx, boardActor("alice", ""), epic.ID))
	sub := task(s.CreateTask(ctx, boardTask("part", func(nt *store.NewTask) { nt.Parent = epic.ID })))
	task(s.ReleaseTask(ctx, boardActor("alice", ""), epic.ID))
	task(s.ClaimTask(ctx, boardActor("bob", ""), sub.ID))
	task(s.CompleteTask(ctx, boardActor("bob", ""), sub.ID, "done", nil))
	want := []boardLine{
		{Content: `task-1 "epic" is ready for alice: claim it with task_claim("task-1").`}, // alice made it: no wake
		{Content: `@bob task-2 "part" is ready: claim it with task_claim("task-2").`, Inbox: []string{"bob"}},
		{Content: `alice released task-1 "epic". It waits for task-2.`},
		{Content: `task-2 completed by bob: part`},
		{Content: `@alice task-1 "epic" is ready for alice: claim it with task_claim("task-1").`, Inbox: []string{"alice"}},
	}
	if diff := cmp.Diff(want, systemLines(t, db)); diff != "" {
		t.Errorf("board lines (-want +got):\n%s", diff)
	}
}

// task_fail with retry puts the task back while retries remain, then it
// fails for good and the tasks waiting for it are named.
func TestBoardLinesOfFailuresWithRetry(t *testing.T) {
	t.Parallel()
	s, _, _ := boardTeam(t, "alice", "bob")
	ctx := t.Context()
	task := must[store.Task](t)
	tk := task(s.CreateTask(ctx, boardTask("flaky", nil)))
	task(s.CreateTask(ctx, boardTask("after", func(nt *store.NewTask) { nt.DependsOn = []string{tk.ID} })))
	sub := s.Bus.Subscribe(100)
	defer sub.Close()
	var lines []string
	for i := range store.DefaultTaskRetries + 1 {
		task(s.ClaimTask(ctx, boardActor("bob", ""), tk.ID))
		task(s.FailTask(ctx, boardActor("bob", ""), tk.ID, fmt.Sprint("timeout ", i), true))
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.Kind == EventMessage {
				lines = append(lines, ev.Message.Content)
			}
			continue
		default:
		}
		break
	}
	want := []string{
		`task-1 "flaky" failed for bob (timeout 0), retry 1 of 2. @alice it is ready: claim it with task_claim("task-1").`,
		`task-1 "flaky" failed for bob (timeout 1), retry 2 of 2. @alice it is ready: claim it with task_claim("task-1").`,
		`task-1 "flaky" failed (bob: timeout 2), after 2 retries; task-2 waits for it and cannot start.`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// A lost lease puts the task back with a line that says why and wakes the
// others free for work, never the agent that lost it.
func TestBoardLinesOfLostLeases(t *testing.T) {
	t.Parallel()
	s, db, clk := boardTeam(t, "alice", "bob", "carol", "outsider")
	ctx := t.Context()
	for _, r := range []store.Run{{ID: "run_a", Agent: store.AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}},
		{ID: "run_b", Agent: store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}}} {
		if _, err := db.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	task := must[store.Task](t)
	ended := task(s.CreateTask(ctx, boardTask("of a dead run", nil)))
	alive := task(s.CreateTask(ctx, boardTask("of a live run", nil)))
	outside := task(s.CreateTask(ctx, boardTask("of an outside agent", nil)))
	leaver := task(s.CreateTask(ctx, boardTask("of a leaver", nil)))
	task(s.ClaimTask(ctx, boardActor("alice", "run_a"), ended.ID))
	task(s.ClaimTask(ctx, boardActor("bob", "run_b"), alive.ID))
	task(s.ClaimTask(ctx, boardActor("outsider", ""), outside.ID))
	task(s.ClaimTask(ctx, boardActor("carol", ""), leaver.ID))
	if err := db.FinishRun(ctx, "run_a", api.RunFailed, "killed by signal SIGKILL", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAgent(ctx, store.AgentKey{Name: "carol", Workflow: "wf", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	sweep := func() []boardLine {
		t.Helper()
		before := len(systemLines(t, db))
		_, msgs, _, err := db.ReturnLostTasks(ctx, Lines{}) // what RunLeases does
		if err != nil {
			t.Fatal(err)
		}
		s.publishAll(msgs)
		return systemLines(t, db)[before:]
	}
	want := []boardLine{
		{Content: `task-1 "of a dead run" went back to pending: alice's run run_a ended (failed: killed by signal SIGKILL) without completing or releasing it. It is ready for anyone: claim it with task_claim("task-1").`},
		{Content: `task-4 "of a leaver" went back to pending: carol is no longer a member of @wf:main. @alice it is ready: claim it with task_claim("task-4").`,
			Inbox: []string{"alice"}},
	}
	if diff := cmp.Diff(want, sweep()); diff != "" {
		t.Errorf("lines of the lost leases (-want +got):\n%s", diff)
	}
	clk.Set(boardT0.Add(store.TaskLease - time.Second))
	if err := db.Heartbeat(ctx, "run_b"); err != nil {
		t.Fatal(err)
	}
	clk.Set(boardT0.Add(store.TaskLease + time.Second))
	got := sweep()
	if len(got) != 1 || !strings.HasPrefix(got[0].Content, `task-3 "of an outside agent" went back to pending: outsider's lease expired (no sign of life for 10m0s). `) {
		t.Errorf("lines of the expired lease = %+v", got)
	}
	if slices.Contains(got[0].Inbox, "outsider") {
		t.Errorf("the agent that lost the lease is woken by its loss: %+v", got[0])
	}
}

// Board lines leave the loop guard's count alone, so agents handing each
// other tasks between their messages still trip it; a completion is
// progress and ends the count, as a human's line does.
func TestBoardLinesLeaveTheLoopGuardCountAloneButACompletionEndsIt(t *testing.T) {
	t.Parallel()
	s, db, _ := boardTeam(t, "alice", "bob")
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, store.Workflow{Name: "wf", Tag: "main", LoopGuard: 3, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	say := func(from string) bool {
		t.Helper()
		m, err := db.AppendMessage(ctx, store.NewMessage{Workflow: "wf", Tag: "main", Sender: from, Content: "over to you"})
		if err != nil {
			t.Fatal(err)
		}
		return m.LoopGuardTripped
	}
	if say("alice") || say("bob") {
		t.Fatal("tripped early")
	}
	task := must[store.Task](t)
	tk := task(s.CreateTask(ctx, boardTask("ping", func(nt *store.NewTask) { nt.Assignee = "bob" }))) // a ready line for bob
	task(s.ClaimTask(ctx, boardActor("bob", ""), tk.ID))
	task(s.ReleaseTask(ctx, boardActor("bob", ""), tk.ID)) // a line: back on the board
	if !say("alice") {
		t.Error("the third agent message in a row did not trip the guard: a board line reset the count")
	}
	if err := db.SetWorkflowState(ctx, "wf", "main", api.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	if say("alice") || say("bob") {
		t.Fatal("tripped early after the resume")
	}
	task(s.ClaimTask(ctx, boardActor("bob", ""), tk.ID))
	task(s.CompleteTask(ctx, boardActor("bob", ""), tk.ID, "", nil))
	if say("alice") || say("bob") {
		t.Error("a completion did not end the count")
	}
}

// taskLines says each kind of news; the cases the board tests above do
// not reach are here.
func TestTaskLines(t *testing.T) {
	t.Parallel()
	base := store.Task{ID: "task-7", Workflow: "wf", Tag: "main", Title: "ship it", State: api.TaskPending}
	waiting := base
	waiting.WaitingOn = []string{"task-5", "task-6"}
	failed := base
	failed.State = api.TaskFailed
	for name, tc := range map[string]struct {
		news store.TaskNews
		want []string
	}{
		"created, waiting": {store.TaskNews{Kind: store.TaskEventCreated, Task: waiting, By: "alice"}, nil},
		"progress":         {store.TaskNews{Kind: store.TaskEventProgress, Task: base, By: "alice"}, nil},
		"returned, waiting": {store.TaskNews{Kind: store.TaskEventReturned, Task: waiting, By: "bob", Reason: "bob's run run_1 is gone"},
			[]string{`task-7 "ship it" went back to pending: bob's run run_1 is gone. It waits for task-5, task-6.`}},
		"failed, two blocked": {store.TaskNews{Kind: store.TaskEventFailed, Task: failed, By: "bob", Reason: "no disk\nat all", Blocked: []string{"task-8", "task-9"}},
			[]string{`task-7 "ship it" failed (bob: no disk at all); task-8, task-9 wait for it and cannot start.`}},
		"released, assigned, priority": {store.TaskNews{Kind: store.TaskEventReleased, Task: func() store.Task { t := base; t.Assignee = "carol"; t.Priority = 2; return t }(), By: "carol"},
			[]string{`carol released task-7 "ship it". It is ready for carol (priority 2): claim it with task_claim("task-7").`}},
	} {
		var got []string
		for _, m := range taskLines(tc.news) {
			got = append(got, m.Content)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
