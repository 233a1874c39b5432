package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// tryTool calls a tool from any goroutine: it reports a protocol error
// instead of failing the test, and a tool error as its text.
func (a *agentSession) tryTool(tool string, args map[string]any) (out map[string]any, toolErr string, err error) {
	res, err := a.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", a.name, tool, err)
	}
	if res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return nil, text, nil
	}
	out = map[string]any{}
	b, _ := json.Marshal(res.StructuredContent)
	return out, "", json.Unmarshal(b, &out)
}

// board reads a board through the HTTP API.
func (th *testHost) board(t testing.TB, target string) map[string]api.Task {
	t.Helper()
	tg, err := api.ParseTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := th.client().Tasks(context.Background(), tg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.Task{}
	for _, tk := range ts {
		out[tk.ID] = tk
	}
	return out
}

// taskDetail reads one task and its history through the HTTP API.
func (th *testHost) taskDetail(t testing.TB, id string) api.TaskDetail {
	t.Helper()
	d, err := th.client().GetTask(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// addTask adds a task as the user, through the HTTP API.
func (th *testHost) addTask(t testing.TB, req api.TaskCreate) api.Task {
	t.Helper()
	tk, err := th.client().CreateTask(context.Background(), req)
	if err != nil {
		t.Fatalf("add task %q: %v", req.Title, err)
	}
	return tk
}

// channelLines is the text of a scope's newest messages, oldest first.
func (th *testHost) channelLines(t testing.TB, target string) []string {
	t.Helper()
	ms, err := th.client().Peek(context.Background(), target, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.From+": "+m.Content)
	}
	return out
}

func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// Eight agents, each with its own MCP session, take tasks off a board of
// 200 until none is left: every task is claimed by one agent and completed
// exactly once, and the channel says so once per task.
func TestTasksEightAgentsClaimTwoHundredTasksAndEachIsCompletedOnce(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	var agents []*agentSession
	for i := range 8 {
		agents = append(agents, th.join(t, fmt.Sprintf("w%d@crew", i)))
	}
	const n = 200
	for i := range n {
		th.addTask(t, api.TaskCreate{Target: "@crew", Title: fmt.Sprint("job ", i), Priority: i % 7})
	}

	var (
		mu   sync.Mutex
		done = map[string]string{} // task → who completed it
		wg   sync.WaitGroup
	)
	errs := make(chan error, len(agents))
	for _, a := range agents {
		wg.Go(func() {
			for {
				claimed, refused, err := a.tryTool("task_claim", nil)
				switch {
				case err != nil:
					errs <- err
					return
				case strings.Contains(refused, "no task is ready for you"):
					return
				case refused != "":
					errs <- fmt.Errorf("%s: claim refused: %s", a.name, refused)
					return
				}
				id := claimed["id"].(string)
				if claimed["holder"] != a.name || claimed["state"] != "claimed" {
					errs <- fmt.Errorf("%s claimed %v", a.name, claimed)
					return
				}
				if _, refused, err := a.tryTool("task_progress", map[string]any{"id": id, "note": "working", "percent": 50}); err != nil || refused != "" {
					errs <- fmt.Errorf("%s progress on %s: %v %s", a.name, id, err, refused)
					return
				}
				if _, refused, err := a.tryTool("task_complete", map[string]any{"id": id, "result": "done by " + a.name}); err != nil || refused != "" {
					errs <- fmt.Errorf("%s completes %s: %v %s", a.name, id, err, refused)
					return
				}
				mu.Lock()
				if prev, twice := done[id]; twice {
					errs <- fmt.Errorf("%s completed by %s and %s", id, prev, a.name)
				}
				done[id] = a.name
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(done) != n {
		t.Fatalf("%d tasks completed, want %d", len(done), n)
	}
	workers := map[string]int{}
	for id, tk := range th.board(t, "@crew") {
		workers[tk.Holder]++
		if tk.State != "completed" || tk.Holder != done[id] || tk.Result != "done by "+done[id] {
			t.Errorf("%s on the board: %+v; completed by %s", id, tk, done[id])
		}
	}
	if len(workers) < 2 {
		t.Errorf("the work went to %v: the agents did not share it", workers)
	}
	d := th.taskDetail(t, "task-100")
	var kinds []string
	for _, ev := range d.History {
		kinds = append(kinds, ev.Kind)
	}
	if strings.Join(kinds, " ") != "created claimed progress completed" {
		t.Errorf("history of task-100: %v", kinds)
	}
	if got := countContaining(th.channelLines(t, "@crew"), " completed by w"); got != n {
		t.Errorf("%d completion lines in the channel, want %d", got, n)
	}
}

// A task whose dependency is not completed cannot be claimed by name, and
// a claim without an id passes over it; completing the dependency makes it
// ready and says so to who may claim it.
func TestTaskWaitingForADependencyCannotBeClaimed(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	lead, dev := th.join(t, "lead@deps"), th.join(t, "dev@deps")
	first := lead.ok("task_create", map[string]any{"title": "Design the schema", "priority": 1})
	second := lead.ok("task_create", map[string]any{"title": "Write the migration", "depends_on": []string{first["id"].(string)}, "priority": 9})
	if second["ready"] != false || fmt.Sprint(second["waiting_on"]) != "[task-1]" {
		t.Errorf("a task after an open one: %v", second)
	}
	dev.fails("task_claim", map[string]any{"id": "task-2"}, "task-2 is not ready: it waits for task-1 (pending)")
	if got := dev.ok("task_claim", nil); got["id"] != "task-1" {
		t.Errorf("claim without an id took %v, want task-1 (task-2 waits for it)", got["id"])
	}
	dev.fails("task_claim", map[string]any{"id": "task-2"}, "it waits for task-1 (claimed, held by dev)")
	dev.ok("task_complete", map[string]any{"id": "task-1", "result": "schema.sql"})

	lines := th.channelLines(t, "@deps")
	for _, want := range []string{
		"system: task-1 completed by dev: Design the schema",
		`system: @dev @lead task-2 "Write the migration" is ready (priority 9): claim it with task_claim("task-2").`,
	} {
		if countContaining(lines, want) != 1 {
			t.Errorf("channel lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if inbox := dev.inbox(); len(inbox) == 0 || !strings.Contains(field(inbox[len(inbox)-1], "content").(string), "task-2") {
		t.Errorf("dev's inbox does not hold the ready line: %v", inbox)
	}
	if got := dev.ok("task_claim", map[string]any{"id": "2"}); got["id"] != "task-2" || got["holder"] != "dev" {
		t.Errorf("claim of task-2 once ready: %v", got)
	}
}

// Only the holder may complete, fail, release or report on a task; the
// others are told who holds it, and the task is untouched.
func TestTaskHeldBySomeoneElseCannotBeCompleted(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, bob := th.join(t, "alice@pair"), th.join(t, "bob@pair")
	alice.ok("task_create", map[string]any{"title": "Fix the flaky test"})
	alice.ok("task_claim", map[string]any{"id": "task-1"})
	bob.fails("task_claim", map[string]any{"id": "task-1"}, "task-1 is already claimed by alice")
	bob.fails("task_complete", map[string]any{"id": "task-1", "result": "mine now"}, "task-1 is held by alice: only the holder may complete it")
	bob.fails("task_fail", map[string]any{"id": "task-1", "reason": "x"}, "held by alice: only the holder may fail it")
	bob.fails("task_release", map[string]any{"id": "task-1"}, "held by alice: only the holder may release it")
	bob.fails("task_progress", map[string]any{"id": "task-1", "note": "x"}, "held by alice: only the holder may record progress on it")
	tk := th.board(t, "@pair")["task-1"]
	if tk.State != "claimed" || tk.Holder != "alice" || tk.Result != "" || tk.LeaseExpiresAt == nil {
		t.Errorf("task-1 after bob's attempts: %+v", tk)
	}
	if n := len(th.taskDetail(t, "task-1").History); n != 2 {
		t.Errorf("history has %d events, want created and claimed", n)
	}
}

// A dependency cycle is refused when the task is created, and the error
// names every task in it; nothing is added.
func TestTaskDependencyCycleIsRefusedNamingTheCycle(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	pm := th.join(t, "pm@plan")
	pm.ok("task_create", map[string]any{"title": "Release 2.0"})                                    // task-1
	pm.ok("task_create", map[string]any{"title": "Freeze the API", "parent": "task-1"})             // task-2: task-1 waits for it
	pm.ok("task_create", map[string]any{"title": "Write the notes", "depends_on": []any{"task-1"}}) // task-3 waits for task-1
	pm.fails("task_create", map[string]any{"title": "Review the notes", "parent": "task-1", "depends_on": []any{"task-3"}},
		"dependency cycle: new task → task-3 → task-1 → new task")
	code, e, _ := th.call(t, "POST", "/tasks", `{"target":"@plan","title":"Loop","parent":"task-1","depends_on":["task-1"]}`)
	if code != http.StatusBadRequest || !strings.Contains(e.Message, "dependency cycle: new task → task-1 → new task") {
		t.Errorf("POST /tasks with a cycle = %d %q", code, e.Message)
	}
	if n := len(th.board(t, "@plan")); n != 3 {
		t.Errorf("the board has %d tasks after the refusals, want 3", n)
	}
}

// The HTTP routes refuse bad input with what to do instead.
func TestTaskRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	th.join(t, "a@web")
	th.addTask(t, api.TaskCreate{Target: "@web", Title: "Ship it"})
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		says               string
	}{
		"no target":        {"POST", "/tasks", `{"title":"x"}`, 400, "target is missing"},
		"agent target":     {"POST", "/tasks", `{"target":"a@web","title":"x"}`, 400, "a@web is an agent: tasks belong to a workflow, give @web"},
		"empty title":      {"POST", "/tasks", `{"target":"@web","title":" "}`, 400, "title is empty"},
		"priority a word":  {"POST", "/tasks", `{"target":"@web","title":"x","priority":"high"}`, 400, `"priority"`},
		"unknown field":    {"POST", "/tasks", `{"target":"@web","title":"x","owner":"a"}`, 400, "owner"},
		"unknown workflow": {"POST", "/tasks", `{"target":"@nowhere","title":"x"}`, 404, `workflow "nowhere:main" not found`},
		"unknown assignee": {"POST", "/tasks", `{"target":"@web","title":"x","assignee":"zed"}`, 400, "assignee: zed is not a member of @web:main"},
		"bad state":        {"GET", "/tasks?target=@web&state=done", "", 400, `unknown task state "done"`},
		"unknown board":    {"GET", "/tasks?target=@nowhere", "", 404, `workflow "nowhere:main" not found`},
		"unknown task":     {"GET", "/tasks/task-99", "", 404, "task task-99 not found"},
		"other board":      {"GET", "/tasks/task-1?target=@global", "", 404, "task task-1 not found in @global:main"},
	} {
		code, e, body := th.call(t, tc.method, tc.path, tc.body)
		if code != tc.status || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %s %s = %d %s; want %d saying %q", name, tc.method, tc.path, code, body, tc.status, tc.says)
		}
	}
	if n := len(th.board(t, "@web")); n != 1 {
		t.Errorf("%d tasks after the refusals, want 1", n)
	}
	if code, _, body := th.call(t, "GET", "/tasks", ""); code != http.StatusOK || strings.TrimSpace(string(body)) != `{"tasks":[]}` {
		t.Errorf("GET /tasks (the global board, empty) = %d %s", code, body)
	}
}

// A task that becomes ready wakes its assignee like a mention would: the
// scheduler runs the agent, whose run claims and completes it.
func TestTaskThatBecomesReadyWakesItsAssignee(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	mockAgent(t, th, "builder",
		map[string]any{"tool": "task_claim"},
		map[string]any{"tool": "task_complete", "args": map[string]any{"id": "task-2", "result": "built"}})
	lead := th.join(t, "lead")
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "Pick the base image", Assignee: "lead"})
	waiting := th.addTask(t, api.TaskCreate{Target: "@global", Title: "Build the image", DependsOn: []string{"task-1"}, Assignee: "builder"})
	if waiting.Ready {
		t.Fatalf("task-2 is ready before its dependency: %+v", waiting)
	}
	lead.ok("task_claim", nil)
	lead.ok("task_complete", map[string]any{"id": "task-1"})
	testkit.WaitFor(t, "builder to complete task-2", func() bool { return th.board(t, "@global")["task-2"].State == "completed" })
	if tk := th.board(t, "@global")["task-2"]; tk.Holder != "builder" || tk.Result != "built" {
		t.Errorf("task-2 = %+v", tk)
	}
	lines := th.channelLines(t, "@global")
	if countContaining(lines, `@builder task-2 "Build the image" is ready for builder`) != 1 || countContaining(lines, "task-2 completed by builder") != 1 {
		t.Errorf("channel:\n%s", strings.Join(lines, "\n"))
	}
}

// A run killed in the middle of a task (SIGKILL of its plugin process)
// loses its lease: the task goes back to pending with a line that says
// why, and a second agent completes it.
func TestTaskOfAKilledRunGoesBackToPendingAndAnotherAgentCompletesIt(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.Scheduler.Attempts = 1 })
	mockAgent(t, th, "victim",
		map[string]any{"tool": "task_claim", "args": map[string]any{"id": "task-1"}},
		map[string]any{"tool": "task_progress", "args": map[string]any{"id": "task-1", "note": "halfway", "percent": 50}},
		map[string]any{"hang": true})
	// Unassigned and ready: the line wakes victim, the only member yet.
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "Migrate the data"})
	testkit.WaitFor(t, "victim's run to report progress", func() bool { return th.board(t, "@global")["task-1"].State == "in_progress" })
	held := th.board(t, "@global")["task-1"]
	ws := runWorkers(t, th)
	if len(ws) != 1 || held.Holder != "victim" || held.HolderRun != ws[0].RunID {
		t.Fatalf("task-1 = %+v held by run %q; workers %+v", held, held.HolderRun, ws)
	}
	rescuer := th.join(t, "rescuer")
	rescuer.fails("task_claim", map[string]any{"id": "task-1"}, "task-1 is already claimed by victim")
	if err := syscall.Kill(ws[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "task-1 back on the board", func() bool { return th.board(t, "@global")["task-1"].State == "pending" })

	d := th.taskDetail(t, "task-1")
	last := d.History[len(d.History)-1]
	want := "victim's run " + ws[0].RunID + " ended (failed: mock plugin process exited (killed by signal SIGKILL)"
	if last.Kind != "returned" || last.Actor != "system" || !strings.Contains(last.Note, want) || d.Task.Retries != 0 {
		t.Errorf("last event %+v, retries %d; want returned saying %q", last, d.Task.Retries, want)
	}
	lines := th.channelLines(t, "@global")
	if countContaining(lines, `task-1 "Migrate the data" went back to pending: `+want) != 1 || countContaining(lines, "@rescuer") != 1 {
		t.Errorf("channel lacks the line saying why task-1 returned, waking rescuer:\n%s", strings.Join(lines, "\n"))
	}
	if inbox := rescuer.inbox(); len(inbox) != 1 || !strings.Contains(field(inbox[0], "content").(string), "went back to pending") {
		t.Errorf("rescuer's inbox: %v", inbox)
	}
	rescuer.ok("task_claim", nil)
	rescuer.ok("task_complete", map[string]any{"id": "task-1", "result": "migrated"})
	if tk := th.board(t, "@global")["task-1"]; tk.State != "completed" || tk.Holder != "rescuer" || tk.Result != "migrated" {
		t.Errorf("task-1 = %+v", tk)
	}
}

// A daemon restart keeps the board: finished and waiting tasks as they
// were, an outside agent's claim (its lease has not expired), and the task
// of the run the stop ended back on the board, saying why.
func TestTaskBoardSurvivesARestartAndDeadRunsLoseTheirLeases(t *testing.T) {
	t.Parallel()
	var cfg *Config
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { cfg = c })
	mockAgent(t, th, "sleeper",
		map[string]any{"tool": "task_claim", "args": map[string]any{"id": "task-1"}},
		map[string]any{"hang": true})
	keeper := th.join(t, "keeper")
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "Long job", Assignee: "sleeper"})
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "Kept", Assignee: "keeper"})
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "Done", Assignee: "keeper"})
	th.addTask(t, api.TaskCreate{Target: "@global", Title: "After the long job", DependsOn: []string{"task-1"}})
	keeper.ok("task_claim", map[string]any{"id": "task-3"})
	keeper.ok("task_complete", map[string]any{"id": "task-3", "result": "ok"})
	keeper.ok("task_claim", map[string]any{"id": "task-2"})
	testkit.WaitFor(t, "sleeper's run to claim task-1", func() bool { return th.board(t, "@global")["task-1"].State == "claimed" })
	run := th.board(t, "@global")["task-1"].HolderRun
	// Paused, so that no new run takes task-1 again after the restart.
	if err := th.client().Pause(context.Background(), api.Target{Agent: "sleeper", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	th.stop(t)

	th2 := startHostWith(t, *cfg)
	testkit.WaitFor(t, "task-1 back on the board", func() bool { return th2.board(t, "@global")["task-1"].State == "pending" })
	board := th2.board(t, "@global")
	for id, want := range map[string]struct{ state, holder string }{
		"task-1": {"pending", ""}, "task-2": {"claimed", "keeper"}, "task-3": {"completed", "keeper"}, "task-4": {"pending", ""},
	} {
		if got := board[id]; got.State != want.state || got.Holder != want.holder {
			t.Errorf("%s after the restart: %s held by %q, want %s held by %q", id, got.State, got.Holder, want.state, want.holder)
		}
	}
	if !board["task-1"].Ready || fmt.Sprint(board["task-4"].WaitingOn) != "[task-1]" {
		t.Errorf("task-1 ready %v, task-4 waits for %v", board["task-1"].Ready, board["task-4"].WaitingOn)
	}
	d := th2.taskDetail(t, "task-1")
	last := d.History[len(d.History)-1]
	if last.Kind != "returned" || !strings.Contains(last.Note, "sleeper's run "+run+" ended (") {
		t.Errorf("task-1's last event: %+v", last)
	}
	// The keeper still holds task-2 and finishes it through a new session.
	th2.join(t, "keeper").ok("task_complete", map[string]any{"id": "task-2", "result": "kept"})
}

// The task tools refuse bad arguments with an error that names what to
// fix, and change nothing.
func TestTaskToolsRefuseBadInput(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice := th.join(t, "alice@wf")
	th.addTask(t, api.TaskCreate{Target: "@wf", Title: "Only task"})
	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"task_create", map[string]any{}, `missing required argument "title"`},
		{"task_create", map[string]any{"title": "x", "priority": "high"}, `argument "priority" must be an integer`},
		{"task_create", map[string]any{"title": "x", "depends_on": "task-1"}, `argument "depends_on" must be a list`},
		{"task_create", map[string]any{"title": "x", "assignee": "zed"}, "assignee: zed is not a member of @wf:main"},
		{"task_create", map[string]any{"title": "x", "parent": "task-9"}, "parent: task-9 is not a task of @wf:main"},
		{"task_create", map[string]any{"title": "x", "owner": "me"}, `unknown argument "owner"`},
		{"task_list", map[string]any{"state": "done"}, `unknown task state "done": use pending, claimed, in_progress, completed, failed or cancelled`},
		{"task_claim", map[string]any{"id": "task-404"}, "task task-404 not found in @wf:main"},
		{"task_progress", map[string]any{"id": "task-1"}, `missing required argument "note"`},
		{"task_progress", map[string]any{"id": "task-1", "note": " "}, "note is empty"},
		{"task_progress", map[string]any{"id": "task-1", "note": "x", "percent": 150}, "percent 150 is out of range: give 0 to 100"},
		{"task_complete", map[string]any{"id": "task-1"}, "task-1 is pending, not held by anyone: claim it with task_claim first"},
		{"task_fail", map[string]any{"id": "task-1"}, `missing required argument "reason"`},
		{"task_release", map[string]any{}, `missing required argument "id"`},
		{"task_release", map[string]any{"id": ""}, "id is empty"},
	} {
		alice.fails(tc.tool, tc.args, tc.says)
	}
	if tk := th.board(t, "@wf")["task-1"]; tk.State != "pending" || len(th.board(t, "@wf")) != 1 {
		t.Errorf("the board after refused calls: %+v", th.board(t, "@wf"))
	}
	if lines := th.channelLines(t, "@wf"); len(lines) != 1 {
		t.Errorf("channel after refused calls:\n%s", strings.Join(lines, "\n"))
	}
}
