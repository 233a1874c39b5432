package store

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// The task board (issue 16). Every rule lives here, inside the write that
// applies it, so two agents racing for a task are decided by the one
// writer: the first claim commits, the second reads it claimed. A change
// decides what it did as facts (TaskNews: a completion, a task back on
// the board, a task that became ready and who may claim it); the caller's
// Lines (host/team) words them, and the lines commit in the change's own
// transaction. The caller announces them after the commit, which wakes
// who they mention. The store writes no chat text of its own.

// Limits and defaults of tasks, exported so that tool descriptions and the
// CLI can state them.
const (
	// TaskLease is how long a claim lasts without a sign of life: a run's
	// heartbeat (its events and the supervisor's pings) renews the leases
	// of the run, an outside agent's tool calls renew its own. A run's end
	// returns its tasks at once; the expiry is the backstop.
	TaskLease = 10 * time.Minute
	// DefaultTaskRetries is how many times task_fail with retry sends a
	// task back to pending before it fails for good.
	DefaultTaskRetries = 2
	// MaxTaskTitle bounds a title (characters): it is quoted in channel
	// lines.
	MaxTaskTitle = 200
	// MaxTaskText bounds a description, result, progress note or failure
	// reason (characters); longer content belongs in a document.
	MaxTaskText = 20_000
	// MaxTaskDeps bounds depends_on.
	MaxTaskDeps = 50
	// MaxTaskArtifacts bounds the artifacts of a completion.
	MaxTaskArtifacts = 50
)

// leaseRenewSlack is how much of a lease may be used before a heartbeat
// writes a new expiry: heartbeats come every few seconds, the page needs
// writing about once a minute.
const leaseRenewSlack = time.Minute

// TaskEventKind says what a line of a task's history records.
type TaskEventKind string

// Task event kinds, the history `tasks show` prints.
const (
	TaskEventCreated   TaskEventKind = "created"
	TaskEventClaimed   TaskEventKind = "claimed"
	TaskEventProgress  TaskEventKind = "progress"
	TaskEventCompleted TaskEventKind = "completed"
	TaskEventFailed    TaskEventKind = "failed"
	TaskEventRetried   TaskEventKind = "retried"  // failed, with a retry left: pending again
	TaskEventReleased  TaskEventKind = "released" // handed back by its holder
	TaskEventReturned  TaskEventKind = "returned" // its lease was lost
	TaskEventCancelled TaskEventKind = "cancelled"
)

const (
	taskIDPrefix  = "task-"
	taskCounterID = "task" // its row in counters
)

// Task is one task of a workflow:tag's board.
type Task struct {
	// ID is "task-N", unique across all scopes and never reused.
	ID                 string
	Workflow, Tag      string
	Title, Description string
	// Priority orders claims: higher first.
	Priority int
	// DependsOn are tasks of the same scope that must be completed before
	// this one can be claimed, in id order.
	DependsOn []string
	// Parent makes this a subtask: the parent waits for its subtasks (it
	// can be claimed and completed only once they are completed).
	Parent string
	// Subtasks are the tasks whose parent this is, in id order.
	Subtasks []string
	// Assignee, when set, is the only agent who may claim the task.
	Assignee string
	// Role, when set, is the role an agent must have to claim the task.
	Role      string
	CreatedBy string
	State     contract.TaskState
	// Holder is the agent holding a claimed or in-progress task, and who
	// completed or failed a finished one; "" while pending.
	Holder string
	// HolderRun is the run holding the lease ("" for an outside agent);
	// LeaseExpiresAt its expiry. Both are zero unless the task is held.
	HolderRun      string
	LeaseExpiresAt time.Time
	// Percent is the last percentage a progress note gave, if any.
	Percent *int
	// Result is what a completion said; Error a failure's reason, or why
	// the task was cancelled.
	Result, Error string
	// Artifacts are the files a completion named, relative to its
	// holder's working directory.
	Artifacts []string
	// Retries counts the failures task_fail sent back to pending.
	Retries, MaxRetries int
	// WaitingOn lists the dependencies and subtasks not completed yet.
	WaitingOn            []string
	CreatedAt, UpdatedAt time.Time
}

// Ready reports whether the task can be claimed now (by its assignee, or
// by anyone when it has none).
func (t Task) Ready() bool { return t.State == contract.TaskPending && len(t.WaitingOn) == 0 }

// TaskEvent is one line of a task's history.
type TaskEvent struct {
	At    time.Time
	Actor string
	Kind  TaskEventKind
	// State is the task's state after the event.
	State   contract.TaskState
	Note    string
	Percent *int
}

// NewTask is a task to add to a board.
type NewTask struct {
	Workflow, Tag      string
	Title, Description string
	Priority           int
	DependsOn          []string
	Parent, Assignee   string
	// Role, when set, routes the task to the agents with that role; a
	// role no agent has is allowed (status warns of it).
	Role string
	// CreatedBy is a member of the scope, or "user".
	CreatedBy string
}

// TaskFilter narrows ListTasks; zero fields match everything.
type TaskFilter struct {
	State    contract.TaskState
	Assignee string
}

// TaskNews is what a change to the board did, as facts for the team to
// tell: the store decides (who may claim a task that became ready is read
// in the change's transaction), the caller's Lines words the lines, which
// the store writes in the same transaction.
type TaskNews struct {
	// Kind is what happened to Task: created, completed, retried, failed,
	// released, or returned (its lease was lost).
	Kind TaskEventKind
	// Task is the task as the change left it.
	Task Task
	// By is who did it: the creator, the holder who completed, failed or
	// released it, or the holder whose lease was lost.
	By string
	// Reason is a failure's reason, or why a lease was lost (the note the
	// task's history keeps).
	Reason string
	// Retry is set when the holder asked for a retry (task_fail with
	// retry), whether or not one was left.
	Retry bool
	// Blocked are the open tasks that wait for a task failed for good:
	// they cannot start.
	Blocked []string
	// Wake is who may claim Task, when the change left it ready, and is
	// to be woken: its assignee, or else the members free for work (idle
	// or running, holding no task); never By, who made it ready and knows.
	Wake []string
	// Ready are the other tasks the change made ready (a completion's
	// dependents and parent, a cancelled subtask's parent), each with who
	// it wakes.
	Ready []ReadyTask
	// Cancelled are the subtasks a cancellation took with it (at any
	// depth), in id order.
	Cancelled []Task
	// Tell are the agents a cancellation concerns, to be woken: who held
	// a cancelled task, and who is behind each Blocked task (its holder,
	// assignee or creator); never By.
	Tell []string
}

// ReadyTask is a task that became ready and who it wakes (see
// TaskNews.Wake; here the agent who made it ready is woken too: it is
// free now).
type ReadyTask struct {
	Task Task
	Wake []string
}

// TaskActor is an agent acting on its team's board, and the run it acts
// in ("" for an outside agent), which holds the leases it takes.
type TaskActor struct {
	AgentKey
	Run string
}

// TaskID reads an id as agents and users write it: "task-3", or just "3".
func TaskID(s string) string {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseUint(s, 10, 63); err == nil {
		return taskIDPrefix + s
	}
	return s
}

// CreateTask adds a task to a board. depends_on and parent must name tasks
// of the same scope, and together they may not make a task wait for
// itself. A task ready at once wakes who may claim it, through the line
// say words for its news (the returned message).
func (db *DB) CreateTask(ctx context.Context, nt NewTask, say Lines) (Task, []Message, error) {
	nt, err := checkNewTask(nt)
	if err != nil {
		return Task{}, nil, err
	}
	s := Scope{Workflow: nt.Workflow, Tag: nt.Tag}
	var (
		t    Task
		msgs []Message
	)
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		if _, err := getWorkflow(conn, s.Workflow, s.Tag); err != nil {
			return err
		}
		members, err := memberNames(conn, s)
		if err != nil {
			return err
		}
		if nt.CreatedBy != "user" && !slices.Contains(members, nt.CreatedBy) {
			return notMember(nt.CreatedBy, s)
		}
		if nt.Assignee != "" && !slices.Contains(members, nt.Assignee) {
			return contract.Errorf(contract.CodeInvalid, "assignee: %s is not a member of %s; members: %s", nt.Assignee, s, strings.Join(members, ", "))
		}
		if err := checkTaskLinks(conn, s, nt); err != nil {
			return err
		}
		n, err := count(conn, `INSERT INTO counters (name, value) VALUES ('`+taskCounterID+`', 1)
			ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`)
		if err != nil {
			return err
		}
		id := taskIDPrefix + strconv.Itoa(n)
		err = conn.execute(`INSERT INTO tasks (id, n, workflow, tag, title, description, priority, parent,
			assignee, role, created_by, max_retries, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{id, n, s.Workflow, s.Tag, nt.Title, nt.Description, nt.Priority, nt.Parent,
				nt.Assignee, nt.Role, nt.CreatedBy, DefaultTaskRetries, now, now}})
		if err != nil {
			return err
		}
		for _, d := range nt.DependsOn {
			if err := conn.execute(`INSERT INTO task_deps (task_id, dep_id) VALUES (?, ?)`,
				&execOptions{Args: []any{id, d}}); err != nil {
				return err
			}
		}
		if err := taskEvent(conn, id, now, nt.CreatedBy, TaskEventCreated, contract.TaskPending, "", nil); err != nil {
			return err
		}
		if t, err = getTask(conn, s, id); err != nil {
			return err
		}
		news := TaskNews{Kind: TaskEventCreated, Task: t, By: nt.CreatedBy}
		if t.Ready() {
			if news.Wake, err = wakeFor(conn, t, nt.CreatedBy); err != nil {
				return err
			}
		}
		msgs, err = appendTaskLines(conn, say, now, news)
		return err
	})
	if err != nil {
		return Task{}, nil, err
	}
	return t, msgs, nil
}

// checkNewTask cleans a new task and applies every rule that needs no
// database, so that bad requests fail before taking the write lock.
func checkNewTask(nt NewTask) (NewTask, error) {
	nt.Title = strings.TrimSpace(nt.Title)
	nt.Parent = TaskID(nt.Parent)
	nt.Assignee = strings.TrimSpace(nt.Assignee)
	nt.Role = strings.TrimSpace(nt.Role)
	if nt.Role != "" {
		if err := tools.CheckRole(nt.Role); err != nil {
			return nt, contract.Errorf(contract.CodeInvalid, "role: %w", err)
		}
	}
	deps := make([]string, 0, len(nt.DependsOn))
	for _, d := range nt.DependsOn {
		if d = TaskID(d); d == "" {
			return nt, contract.Errorf(contract.CodeInvalid, "depends_on: an id is empty: name each task, e.g. task-3")
		}
		deps = append(deps, d)
	}
	nt.DependsOn = dedupe(deps)
	switch {
	case nt.Workflow == "" || nt.Tag == "":
		return nt, contract.Errorf(contract.CodeInvalid, "a task needs a workflow and tag")
	case nt.CreatedBy == "":
		return nt, contract.Errorf(contract.CodeInvalid, "a task needs a creator")
	case nt.Title == "":
		return nt, contract.Errorf(contract.CodeInvalid, "title is empty: say in a line what is to be done")
	case len(nt.DependsOn) > MaxTaskDeps:
		return nt, contract.Errorf(contract.CodeInvalid, "depends_on names %d tasks; the limit is %d: group them under a parent task", len(nt.DependsOn), MaxTaskDeps)
	}
	if err := checkTaskText("title", nt.Title, MaxTaskTitle); err != nil {
		return nt, err
	}
	if strings.ContainsAny(nt.Title, "\n\r") {
		return nt, contract.Errorf(contract.CodeInvalid, "title is more than one line: put the details in description")
	}
	return nt, checkTaskText("description", nt.Description, MaxTaskText)
}

// checkTaskText refuses text over max characters or with a NUL byte.
func checkTaskText(what, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return contract.Errorf(contract.CodeInvalid, "%s is %d characters; the limit is %d: put long content in a document (team_doc_write) and point to it", what, n, max)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return contract.Errorf(contract.CodeInvalid, "%s contains a NUL byte (at byte %d): send text", what, i)
	}
	return nil
}

// checkTaskLinks checks that depends_on and parent name tasks of s, that a
// parent is still open, and that the new task would not wait for itself:
// it waits for its dependencies, and its parent waits for it, so a
// dependency that (through dependencies and subtasks) waits for the parent
// closes a cycle, which the error spells out.
func checkTaskLinks(conn querier, s Scope, nt NewTask) error {
	ids := append(slices.Clone(nt.DependsOn), nt.Parent)
	known := map[string]contract.TaskState{}
	err := conn.execute(`SELECT id, state FROM tasks WHERE workflow = ? AND tag = ? AND id IN (`+placeholders(len(ids))+`)`,
		&execOptions{Args: append([]any{s.Workflow, s.Tag}, anySlice(ids)...), ResultFunc: func(st row) error {
			known[st.ColumnText(0)] = contract.TaskState(st.ColumnText(1))
			return nil
		}})
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range nt.DependsOn {
		if _, ok := known[d]; !ok {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		return contract.Errorf(contract.CodeInvalid, "depends_on: %s %s not a task of %s", strings.Join(missing, ", "), isAre(len(missing)), s)
	}
	if nt.Parent == "" {
		return nil
	}
	state, ok := known[nt.Parent]
	if !ok {
		return contract.Errorf(contract.CodeInvalid, "parent: %s is not a task of %s", nt.Parent, s)
	}
	if state.Done() {
		return contract.Errorf(contract.CodeConflict, "parent: %s is %s, so it cannot get a subtask: create the task without a parent", nt.Parent, state)
	}
	if slices.Contains(nt.DependsOn, nt.Parent) {
		return contract.Errorf(contract.CodeInvalid, "dependency cycle: new task → %s → new task (it would depend on its own parent, which waits for its subtasks)", nt.Parent)
	}
	waits, err := waitGraph(conn, s)
	if err != nil {
		return err
	}
	if path := findPath(waits, nt.DependsOn, nt.Parent); path != nil {
		return contract.Errorf(contract.CodeInvalid, "dependency cycle: new task → %s → new task (→ means \"waits for\": a task waits for its depends_on, a parent for its subtasks)",
			strings.Join(path, " → "))
	}
	return nil
}

// waitGraph is every "waits for" edge of s: a task waits for its
// dependencies and a parent for its subtasks.
func waitGraph(conn querier, s Scope) (map[string][]string, error) {
	waits := map[string][]string{}
	err := conn.execute(`SELECT d.task_id, d.dep_id FROM task_deps d JOIN tasks t ON t.id = d.task_id
		WHERE t.workflow = ?1 AND t.tag = ?2
		UNION ALL
		SELECT parent, id FROM tasks WHERE workflow = ?1 AND tag = ?2 AND parent IS NOT NULL`,
		&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			waits[st.ColumnText(0)] = append(waits[st.ColumnText(0)], st.ColumnText(1))
			return nil
		}})
	return waits, err
}

// findPath returns a shortest path of waits from one of from to target
// (both ends included), or nil.
func findPath(waits map[string][]string, from []string, target string) []string {
	prev := map[string]string{}
	queue := []string{}
	for _, f := range from {
		if _, seen := prev[f]; !seen {
			prev[f] = ""
			queue = append(queue, f)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == target {
			var path []string
			for at := cur; at != ""; at = prev[at] {
				path = append([]string{at}, path...)
			}
			return path
		}
		for _, next := range waits[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// ListTasks returns the tasks of s that match f, oldest first.
func (db *DB) ListTasks(ctx context.Context, s Scope, f TaskFilter) ([]Task, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, contract.Errorf(contract.CodeInvalid, "unknown task state %q: use %s", f.State, listOr(taskStateNames()))
	}
	var ts []Task
	err := db.read(ctx, func(conn querier) error {
		if _, err := getWorkflow(conn, s.Workflow, s.Tag); err != nil {
			return err
		}
		all, err := listTasks(conn, s)
		if err != nil {
			return err
		}
		for _, t := range all {
			if (f.State == "" || t.State == f.State) && (f.Assignee == "" || t.Assignee == f.Assignee) {
				ts = append(ts, t)
			}
		}
		return nil
	})
	return ts, err
}

// GetTask returns one task of s with its history. An empty s finds the
// task in whichever scope it is (ids are unique across scopes).
func (db *DB) GetTask(ctx context.Context, s Scope, id string) (Task, []TaskEvent, error) {
	var (
		t  Task
		ev []TaskEvent
	)
	err := db.read(ctx, func(conn querier) (err error) {
		id = TaskID(id)
		if s == (Scope{}) {
			err = conn.execute(`SELECT workflow, tag FROM tasks WHERE id = ?`, &execOptions{
				Args: []any{id}, ResultFunc: func(st row) error {
					s = Scope{Workflow: st.ColumnText(0), Tag: st.ColumnText(1)}
					return nil
				}})
			if err == nil && s == (Scope{}) {
				err = contract.Errorf(contract.CodeNotFound, "task %s not found: `agent-worker tasks @workflow` lists a board's ids", id)
			}
			if err != nil {
				return err
			}
		}
		if t, err = getTask(conn, s, id); err != nil {
			return err
		}
		ev, err = taskHistory(conn, id)
		return err
	})
	return t, ev, err
}

// ClaimTask gives a task to an agent: the one named, or with id "" the
// best ready one (assigned to the agent first, then by priority, then
// oldest). The claim holds a lease for the agent's run. Claiming a task
// the agent already holds renews its lease.
func (db *DB) ClaimTask(ctx context.Context, a TaskActor, id string) (Task, error) {
	var t Task
	s := a.Scope()
	err := db.write(ctx, func(conn querier) (err error) {
		now := db.nowMs()
		me, err := checkActor(conn, a)
		if err != nil {
			return err
		}
		if id = TaskID(id); id == "" {
			if id, err = bestReady(conn, a, me.Roles); err != nil {
				return err
			}
		}
		if t, err = getTask(conn, s, id); err != nil {
			return err
		}
		switch {
		case t.State.Held() && t.Holder == a.Name:
			return holdTask(conn, &t, a, t.State, now)
		case t.State.Held():
			return contract.Errorf(contract.CodeConflict, "%s is already claimed by %s: claim another (task_claim without an id picks a ready one)", t.ID, t.Holder)
		case t.State == contract.TaskCompleted:
			return contract.Errorf(contract.CodeConflict, "%s is already completed (by %s): claim another (task_claim without an id picks a ready one)", t.ID, t.Holder)
		case t.State == contract.TaskFailed:
			return contract.Errorf(contract.CodeConflict, "%s failed (%s): create a new task to try again", t.ID, OneLine(t.Error, 200))
		case t.State == contract.TaskCancelled:
			return contract.Errorf(contract.CodeConflict, "%s was cancelled (%s): claim another (task_claim without an id picks a ready one)", t.ID, OneLine(t.Error, 200))
		case t.Assignee != "" && t.Assignee != a.Name:
			return contract.Errorf(contract.CodePermission, "%s is assigned to %s: only %s may claim it", t.ID, t.Assignee, t.Assignee)
		case t.Role != "" && !slices.Contains(me.Roles, t.Role):
			return contract.Errorf(contract.CodePermission, "%s is for the role %s, which you do not have (yours: %s): claim another (task_claim without an id picks one for you)",
				t.ID, t.Role, rolesOrNone(me.Roles))
		case len(t.WaitingOn) > 0:
			waiting, err := describeTasks(conn, s, t.WaitingOn)
			if err != nil {
				return err
			}
			return contract.Errorf(contract.CodeConflict, "%s is not ready: it waits for %s, not completed yet; claim it once they are, or call task_claim without an id for a ready task",
				t.ID, waiting)
		}
		if err := holdTask(conn, &t, a, contract.TaskClaimed, now); err != nil {
			return err
		}
		return taskEvent(conn, t.ID, now, a.Name, TaskEventClaimed, t.State, "", nil)
	})
	if err != nil {
		return Task{}, err
	}
	return t, nil
}

// bestReady picks the task ClaimTask without an id gives a, or says why
// there is none.
func bestReady(conn querier, a TaskActor, roles []string) (string, error) {
	ids, err := claimable(conn, a, roles, 1)
	if err != nil || len(ids) > 0 {
		return strings.Join(ids, ""), err
	}
	var pending, others, held, role int
	args, inRoles := rolesArgs([]any{a.Workflow, a.Tag, a.Name}, roles)
	err = conn.execute(`SELECT
		count(*) FILTER (WHERE state = 'pending' AND (assignee = '' OR assignee = ?3) AND (role = '' OR role IN (`+inRoles+`))),
		count(*) FILTER (WHERE state = 'pending' AND assignee <> '' AND assignee <> ?3),
		count(*) FILTER (WHERE state = 'claimed' OR state = 'in_progress'),
		count(*) FILTER (WHERE state = 'pending' AND (assignee = '' OR assignee = ?3) AND role <> '' AND role NOT IN (`+inRoles+`))
		FROM tasks WHERE workflow = ?1 AND tag = ?2`,
		&execOptions{Args: args, ResultFunc: func(st row) error {
			pending, others, held, role = st.ColumnInt(0), st.ColumnInt(1), st.ColumnInt(2), st.ColumnInt(3)
			return nil
		}})
	if err != nil {
		return "", err
	}
	return "", contract.Errorf(contract.CodeNotFound, "no task is ready for you in %s (%d pending wait for dependencies or subtasks, %d are assigned to others, %d are for a role you do not have (yours: %s), %d are held): task_list shows the board, and a task that becomes ready wakes you",
		a.Scope(), pending, others, role, rolesOrNone(roles), held)
}

// claimable lists the ready tasks a may claim, best first, at most limit
// (0: all): assigned to a first, then asking for one of a's roles, then
// open to anyone; by priority, then oldest. A task with a role goes only
// to an agent with that role; one without goes to anyone, after the
// role's own work.
func claimable(conn querier, a TaskActor, roles []string, limit int) ([]string, error) {
	args, inRoles := rolesArgs([]any{a.Workflow, a.Tag, a.Name}, roles)
	q := `SELECT t.id FROM tasks t
		WHERE t.workflow = ?1 AND t.tag = ?2 AND t.state = 'pending' AND (t.assignee = '' OR t.assignee = ?3)
		  AND (t.role = '' OR t.role IN (` + inRoles + `))
		  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks x ON x.id = d.dep_id WHERE d.task_id = t.id AND x.state <> 'completed')
		  AND NOT EXISTS (SELECT 1 FROM tasks c WHERE c.parent = t.id AND c.state <> 'completed' AND c.state <> 'cancelled')
		ORDER BY t.assignee = ?3 DESC, t.role <> '' DESC, t.priority DESC, t.n`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	var ids []string
	err := conn.execute(q, &execOptions{Args: args, ResultFunc: func(st row) error {
		ids = append(ids, st.ColumnText(0))
		return nil
	}})
	return ids, err
}

// rolesArgs appends roles to args as numbered parameters and returns the
// list for an IN (…): "?4, ?5", or ” when roles is empty (no role is
// empty, so it matches no task's role).
func rolesArgs(args []any, roles []string) ([]any, string) {
	if len(roles) == 0 {
		return args, "''"
	}
	ps := make([]string, len(roles))
	for i, r := range roles {
		args = append(args, r)
		ps[i] = "?" + strconv.Itoa(len(args))
	}
	return args, strings.Join(ps, ", ")
}

func rolesOrNone(roles []string) string {
	if len(roles) == 0 {
		return "none"
	}
	return strings.Join(roles, ", ")
}

// TaskProgress records a note (and optionally a percentage) on a task the
// agent holds; the first one moves it from claimed to in_progress.
func (db *DB) TaskProgress(ctx context.Context, a TaskActor, id, note string, percent *int) (Task, error) {
	note = strings.TrimSpace(note)
	switch {
	case note == "":
		return Task{}, contract.Errorf(contract.CodeInvalid, "note is empty: say in a line what is done or what comes next")
	case percent != nil && (*percent < 0 || *percent > 100):
		return Task{}, contract.Errorf(contract.CodeInvalid, "percent %d is out of range: give 0 to 100", *percent)
	}
	if err := checkTaskText("note", note, MaxTaskText); err != nil {
		return Task{}, err
	}
	t, _, err := db.changeHeld(ctx, a, id, "record progress on", nil, func(conn querier, t *Task, now int64) (TaskNews, error) {
		if err := holdTask(conn, t, a, contract.TaskInProgress, now); err != nil {
			return TaskNews{}, err
		}
		if percent != nil {
			if err := conn.execute(`UPDATE tasks SET percent = ? WHERE id = ?`, &execOptions{Args: []any{*percent, t.ID}}); err != nil {
				return TaskNews{}, err
			}
			p := *percent
			t.Percent = &p
		}
		return TaskNews{Kind: TaskEventProgress}, taskEvent(conn, t.ID, now, a.Name, TaskEventProgress, t.State, note, percent)
	})
	return t, err
}

// CompleteTask finishes a task the agent holds, keeping its result and
// artifacts (paths relative to the agent's working directory, which the
// caller checked exist there; here they are checked to stay inside it).
// Its subtasks must be completed (or cancelled) first. The channel hears
// of it, and the tasks that were waiting only for it wake who may claim
// them (the news names them and who each wakes; say words the lines).
func (db *DB) CompleteTask(ctx context.Context, a TaskActor, id, result string, artifacts []string, say Lines) (Task, []Message, error) {
	result = strings.TrimSpace(result)
	if err := checkTaskText("result", result, MaxTaskText); err != nil {
		return Task{}, nil, err
	}
	artifacts, err := CleanArtifacts(artifacts)
	if err != nil {
		return Task{}, nil, err
	}
	return db.changeHeld(ctx, a, id, "complete", say, func(conn querier, t *Task, now int64) (TaskNews, error) {
		open := slices.DeleteFunc(slices.Clone(t.WaitingOn), func(w string) bool { return !slices.Contains(t.Subtasks, w) })
		if len(open) > 0 {
			subs, err := describeTasks(conn, a.Scope(), open)
			if err != nil {
				return TaskNews{}, err
			}
			return TaskNews{}, contract.Errorf(contract.CodeConflict, "%s has subtasks not completed yet: %s; complete them first, or release it (task_release)", t.ID, subs)
		}
		if err := finishTask(conn, t, contract.TaskCompleted, result, "", now); err != nil {
			return TaskNews{}, err
		}
		if len(artifacts) > 0 {
			if err := conn.execute(`UPDATE tasks SET artifacts = ? WHERE id = ?`, &execOptions{Args: []any{rolesJSON(artifacts), t.ID}}); err != nil {
				return TaskNews{}, err
			}
			t.Artifacts = artifacts
		}
		if err := taskEvent(conn, t.ID, now, a.Name, TaskEventCompleted, t.State, result, nil); err != nil {
			return TaskNews{}, err
		}
		ready, err := nowReady(conn, *t)
		return TaskNews{Kind: TaskEventCompleted, Ready: ready}, err
	})
}

// CleanArtifacts checks the paths a completion names: relative, inside
// the working directory they are relative to (no "..", no absolute path),
// slash-separated, at most MaxTaskArtifacts; it returns them cleaned and
// without repeats, in the order given.
func CleanArtifacts(paths []string) ([]string, error) {
	if len(paths) > MaxTaskArtifacts {
		return nil, contract.Errorf(contract.CodeInvalid, "artifacts names %d paths; the limit is %d: list a folder, or put the list in a document", len(paths), MaxTaskArtifacts)
	}
	var out []string
	for _, p := range paths {
		p = strings.TrimSpace(p)
		c := path.Clean(strings.ReplaceAll(p, "\\", "/"))
		switch {
		case p == "" || c == ".":
			return nil, contract.Errorf(contract.CodeInvalid, "artifacts: a path is empty: name each file, e.g. docs/report.md")
		case strings.ContainsRune(p, 0):
			return nil, contract.Errorf(contract.CodeInvalid, "artifacts: %q contains a NUL byte", p)
		case path.IsAbs(c) || filepath.IsAbs(p):
			return nil, contract.Errorf(contract.CodeInvalid, "artifacts: %s is absolute: give it relative to your working directory, e.g. docs/report.md", p)
		case c == ".." || strings.HasPrefix(c, "../"):
			return nil, contract.Errorf(contract.CodeInvalid, "artifacts: %s leaves your working directory: name files inside it", p)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// CancelTask cancels a task that is not completed or failed, with every
// open subtask under it (at any depth), in one write: by is a member of
// s or "user"; reason says why. Cancelling a completed, failed or
// cancelled task is refused and writes nothing. The news names the
// subtasks cancelled with it, the open tasks that waited for any of them
// (Blocked: they cannot start now), who to tell (Tell), and a parent the
// cancellation left ready; say words the lines.
func (db *DB) CancelTask(ctx context.Context, s Scope, by, id, reason string, say Lines) (Task, []Message, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Task{}, nil, contract.Errorf(contract.CodeInvalid, "reason is empty: say why the task is no longer wanted")
	}
	if err := checkTaskText("reason", reason, MaxTaskText); err != nil {
		return Task{}, nil, err
	}
	if id = TaskID(id); id == "" {
		return Task{}, nil, contract.Errorf(contract.CodeInvalid, "id is empty: name the task, e.g. task-3")
	}
	var (
		t    Task
		msgs []Message
	)
	err := db.write(ctx, func(conn querier) (err error) {
		now := db.nowMs()
		if by != "user" {
			if _, err := getAgent(conn, AgentKey{Workflow: s.Workflow, Tag: s.Tag, Name: by}); err != nil {
				return err
			}
		}
		if t, err = getTask(conn, s, id); err != nil {
			return err
		}
		switch t.State {
		case contract.TaskCompleted:
			return contract.Errorf(contract.CodeConflict, "%s is already completed (by %s), so it cannot be cancelled: create a task to undo its work if it must be undone", t.ID, t.Holder)
		case contract.TaskFailed:
			return contract.Errorf(contract.CodeConflict, "%s has already failed (%s), so it cannot be cancelled", t.ID, OneLine(t.Error, 200))
		case contract.TaskCancelled:
			return contract.Errorf(contract.CodeConflict, "%s is already cancelled (%s)", t.ID, OneLine(t.Error, 200))
		}
		subs, err := openDescendants(conn, s, t.ID)
		if err != nil {
			return err
		}
		news := TaskNews{Kind: TaskEventCancelled, By: by, Reason: reason}
		tell := map[string]bool{}
		cancel := func(c *Task, note string) error {
			if c.State.Held() {
				tell[c.Holder] = true
			}
			if err := finishTask(conn, c, contract.TaskCancelled, "", reason, now); err != nil {
				return err
			}
			return taskEvent(conn, c.ID, now, by, TaskEventCancelled, c.State, note, nil)
		}
		if err := cancel(&t, reason); err != nil {
			return err
		}
		cancelled := []string{t.ID}
		for i := range subs {
			if err := cancel(&subs[i], "cancelled with "+t.ID+": "+reason); err != nil {
				return err
			}
			cancelled = append(cancelled, subs[i].ID)
		}
		news.Cancelled = subs
		for _, c := range cancelled {
			blocked, err := waitingFor(conn, c)
			if err != nil {
				return err
			}
			for _, b := range blocked {
				if !slices.Contains(news.Blocked, b) && b != t.Parent {
					news.Blocked = append(news.Blocked, b)
				}
			}
		}
		for _, b := range news.Blocked {
			bt, err := getTask(conn, s, b)
			if err != nil {
				return err
			}
			switch {
			case bt.State.Held():
				tell[bt.Holder] = true
			case bt.Assignee != "":
				tell[bt.Assignee] = true
			case bt.CreatedBy != "user":
				tell[bt.CreatedBy] = true
			}
		}
		if t.Parent != "" { // its parent may wait for nothing else now
			if news.Ready, err = nowReady(conn, t); err != nil {
				return err
			}
		}
		members, err := memberNames(conn, s)
		if err != nil {
			return err
		}
		for name := range tell {
			if name != by && slices.Contains(members, name) {
				news.Tell = append(news.Tell, name)
			}
		}
		slices.Sort(news.Tell)
		news.Task = t
		if say == nil {
			return nil
		}
		msgs, err = appendTaskLines(conn, say, now, news)
		return err
	})
	if err != nil {
		return Task{}, nil, err
	}
	return t, msgs, nil
}

// openDescendants loads the subtasks under id at any depth that are not
// completed, failed or cancelled, in id order.
func openDescendants(conn querier, s Scope, id string) ([]Task, error) {
	var ids []string
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		err := conn.execute(`SELECT id, state FROM tasks WHERE parent = ? ORDER BY n`, &execOptions{Args: []any{cur},
			ResultFunc: func(st row) error {
				queue = append(queue, st.ColumnText(0))
				if !contract.TaskState(st.ColumnText(1)).Done() {
					ids = append(ids, st.ColumnText(0))
				}
				return nil
			}})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Task, 0, len(ids))
	for _, d := range ids {
		t, err := getTask(conn, s, d)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Task) int { return cmpTaskID(a.ID, b.ID) })
	return out, nil
}

// cmpTaskID orders task ids by their number.
func cmpTaskID(a, b string) int {
	na, _ := strconv.Atoi(strings.TrimPrefix(a, taskIDPrefix))
	nb, _ := strconv.Atoi(strings.TrimPrefix(b, taskIDPrefix))
	return na - nb
}

// FailTask records that the agent could not do a task it holds. With
// retry, while retries remain, the task goes back to pending for another
// try (the reason stays as its error); otherwise it fails for good, and
// the tasks that wait for it cannot start.
func (db *DB) FailTask(ctx context.Context, a TaskActor, id, reason string, retry bool, say Lines) (Task, []Message, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Task{}, nil, contract.Errorf(contract.CodeInvalid, "reason is empty: say why the task cannot be done")
	}
	if err := checkTaskText("reason", reason, MaxTaskText); err != nil {
		return Task{}, nil, err
	}
	return db.changeHeld(ctx, a, id, "fail", say, func(conn querier, t *Task, now int64) (TaskNews, error) {
		news := TaskNews{Reason: reason, Retry: retry}
		if retry && t.Retries < t.MaxRetries {
			err := conn.execute(`UPDATE tasks SET retries = retries + 1 WHERE id = ?`, &execOptions{Args: []any{t.ID}})
			if err != nil {
				return TaskNews{}, err
			}
			t.Retries++
			if err := finishTask(conn, t, contract.TaskPending, "", reason, now); err != nil {
				return TaskNews{}, err
			}
			if err := taskEvent(conn, t.ID, now, a.Name, TaskEventRetried, t.State, reason, nil); err != nil {
				return TaskNews{}, err
			}
			news.Kind = TaskEventRetried
			news.Wake, err = wakeIfReady(conn, *t, a.Name)
			return news, err
		}
		if err := finishTask(conn, t, contract.TaskFailed, "", reason, now); err != nil {
			return TaskNews{}, err
		}
		if err := taskEvent(conn, t.ID, now, a.Name, TaskEventFailed, t.State, reason, nil); err != nil {
			return TaskNews{}, err
		}
		news.Kind = TaskEventFailed
		var err error
		news.Blocked, err = waitingFor(conn, t.ID)
		return news, err
	})
}

// ReleaseTask gives a held task back: pending again, for anyone who may
// claim it, with its retries unchanged.
func (db *DB) ReleaseTask(ctx context.Context, a TaskActor, id string, say Lines) (Task, []Message, error) {
	return db.changeHeld(ctx, a, id, "release", say, func(conn querier, t *Task, now int64) (TaskNews, error) {
		if err := finishTask(conn, t, contract.TaskPending, "", t.Error, now); err != nil {
			return TaskNews{}, err
		}
		if err := taskEvent(conn, t.ID, now, a.Name, TaskEventReleased, t.State, "", nil); err != nil {
			return TaskNews{}, err
		}
		wake, err := wakeIfReady(conn, *t, a.Name)
		return TaskNews{Kind: TaskEventReleased, Wake: wake}, err
	})
}

// changeHeld runs change, in one write, on a task that a holds (anything
// else is refused, saying what to do), and returns the task as change left
// it with the channel lines say words for change's news (its Task and By
// filled in here), written in the same write; a nil say writes none.
func (db *DB) changeHeld(ctx context.Context, a TaskActor, id, what string, say Lines,
	change func(conn querier, t *Task, now int64) (TaskNews, error)) (Task, []Message, error) {
	var (
		t    Task
		msgs []Message
	)
	err := db.write(ctx, func(conn querier) (err error) {
		now := db.nowMs()
		if t, err = heldTask(conn, a, id, what); err != nil {
			return err
		}
		news, err := change(conn, &t, now)
		if err != nil || say == nil {
			return err
		}
		news.Task, news.By = t, a.Name
		msgs, err = appendTaskLines(conn, say, now, news)
		return err
	})
	if err != nil {
		return Task{}, nil, err
	}
	return t, msgs, nil
}

// lostTasksSQL selects the held tasks whose lease is lost: expired, held
// by a run that is no longer running (or no longer recorded), or held by
// an agent that left the scope. Their retries are unchanged: losing a
// lease is the holder's or the daemon's misfortune, not the task's.
const lostTasksSQL = `SELECT t.id, t.workflow, t.tag, t.holder, t.holder_run, r.id IS NOT NULL, coalesce(r.state, ''), coalesce(r.error, ''),
	EXISTS (SELECT 1 FROM agents a WHERE a.workflow = t.workflow AND a.tag = t.tag AND a.name = t.holder)
	FROM tasks t LEFT JOIN runs r ON t.holder_run <> '' AND r.id = t.holder_run
	WHERE (t.state = 'claimed' OR t.state = 'in_progress')
	  AND (t.lease_expires_at <= ?1
	       OR (t.holder_run <> '' AND (r.id IS NULL OR (r.state <> 'running' AND r.state <> 'queued')))
	       OR NOT EXISTS (SELECT 1 FROM agents a WHERE a.workflow = t.workflow AND a.tag = t.tag AND a.name = t.holder))
	ORDER BY t.n`

// ReturnLostTasks sends every task whose lease is lost back to pending,
// with a channel line (say words its news: why, in Reason, and who it
// wakes, never the agent that lost it) written in the same write, and
// returns the tasks, their lines and the earliest expiry of the leases
// still held (zero when no task is held), so the daemon can sleep until
// then.
// The daemon calls it when a run ends, at start-up (the runs that died
// with the previous daemon were marked failed by then) and when the next
// lease expires. It costs one read when nothing is lost.
func (db *DB) ReturnLostTasks(ctx context.Context, say Lines) ([]Task, []Message, time.Time, error) {
	lost := false
	var next time.Time
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT EXISTS (`+lostTasksSQL+`), (`+nextLeaseSQL+`)`, &execOptions{
			Args: []any{db.nowMs()}, ResultFunc: func(st row) error {
				lost, next = st.ColumnBool(0), msOrZero(st.ColumnInt64(1))
				return nil
			}})
	})
	if err != nil || !lost {
		return nil, nil, next, err
	}
	var (
		ts   []Task
		msgs []Message
	)
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		type loss struct {
			id, holder, why string
			s               Scope
		}
		var losses []loss
		err := conn.execute(lostTasksSQL, &execOptions{Args: []any{now}, ResultFunc: func(st row) error {
			l := loss{id: st.ColumnText(0), s: Scope{Workflow: st.ColumnText(1), Tag: st.ColumnText(2)}}
			holder, run := st.ColumnText(3), st.ColumnText(4)
			l.holder = holder
			switch runKnown, runState, runErr, member := st.ColumnBool(5), st.ColumnText(6), st.ColumnText(7), st.ColumnBool(8); {
			case !member:
				l.why = fmt.Sprintf("%s is no longer a member of %s", holder, l.s)
			case run != "" && runKnown && runState != string(contract.RunRunning) && runState != string(contract.RunQueued):
				l.why = fmt.Sprintf("%s's run %s ended (%s", holder, run, runState)
				if runErr != "" {
					l.why += ": " + OneLine(runErr, 200)
				}
				l.why += ") without completing or releasing it"
			case run != "" && !runKnown:
				l.why = fmt.Sprintf("%s's run %s is gone", holder, run)
			default:
				l.why = fmt.Sprintf("%s's lease expired (no sign of life for %s)", holder, TaskLease)
			}
			losses = append(losses, l)
			return nil
		}})
		if err != nil {
			return err
		}
		for _, l := range losses {
			t, err := getTask(conn, l.s, l.id)
			if err != nil {
				return err
			}
			if err := finishTask(conn, &t, contract.TaskPending, "", t.Error, now); err != nil {
				return err
			}
			if err := taskEvent(conn, t.ID, now, "system", TaskEventReturned, t.State, l.why, nil); err != nil {
				return err
			}
			// The holder is not woken by its own loss: a run that ends
			// without finishing its task must not be run again for it
			// and again (a crashed run is retried by the scheduler).
			wake, err := wakeIfReady(conn, t, l.holder)
			if err != nil {
				return err
			}
			m, err := appendTaskLines(conn, say, now, TaskNews{Kind: TaskEventReturned, Task: t, By: l.holder, Reason: l.why, Wake: wake})
			if err != nil {
				return err
			}
			ts, msgs = append(ts, t), append(msgs, m...)
		}
		return conn.execute(nextLeaseSQL, &execOptions{ResultFunc: func(st row) error {
			next = msOrZero(st.ColumnInt64(0))
			return nil
		}})
	})
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	return ts, msgs, next, nil
}

// nextLeaseSQL selects the earliest expiry of a held task's lease, NULL
// (read as 0) when no task is held.
const nextLeaseSQL = `SELECT min(lease_expires_at) FROM tasks WHERE state = 'claimed' OR state = 'in_progress'`

// MyTasks is an agent's own view of its board, in one write that is also
// its sign of life: the leases of the tasks it holds are renewed (for a
// run as for an outside agent), then it gets those tasks, the ready tasks
// it may claim, best first (the order ClaimTask without an id takes
// them in), and its roles.
func (db *DB) MyTasks(ctx context.Context, a TaskActor) (held, claim []Task, roles []string, err error) {
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		me, err := checkActor(conn, a)
		if err != nil {
			return err
		}
		roles = me.Roles
		err = conn.execute(`UPDATE tasks SET lease_expires_at = ?1
			WHERE workflow = ?2 AND tag = ?3 AND (state = 'claimed' OR state = 'in_progress') AND holder = ?4`,
			&execOptions{Args: []any{now + TaskLease.Milliseconds(), a.Workflow, a.Tag, a.Name}})
		if err != nil {
			return err
		}
		var heldIDs []string
		err = conn.execute(`SELECT id FROM tasks WHERE workflow = ?1 AND tag = ?2 AND (state = 'claimed' OR state = 'in_progress') AND holder = ?3 ORDER BY n`,
			&execOptions{Args: []any{a.Workflow, a.Tag, a.Name}, ResultFunc: func(st row) error {
				heldIDs = append(heldIDs, st.ColumnText(0))
				return nil
			}})
		if err != nil {
			return err
		}
		ids, err := claimable(conn, a, roles, 0)
		if err != nil {
			return err
		}
		load := func(ids []string) ([]Task, error) {
			out := make([]Task, 0, len(ids))
			for _, id := range ids {
				t, err := getTask(conn, a.Scope(), id)
				if err != nil {
					return nil, err
				}
				out = append(out, t)
			}
			return out, nil
		}
		if held, err = load(heldIDs); err != nil {
			return err
		}
		claim, err = load(ids)
		return err
	})
	return held, claim, roles, err
}

// RenewAgentLeases renews the leases an outside agent (one without a run)
// holds; its tool calls are its only sign of life. A run's leases are
// renewed by its heartbeat instead (renewRunLeases).
func (db *DB) RenewAgentLeases(ctx context.Context, k AgentKey) error {
	return db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		return conn.execute(`UPDATE tasks SET lease_expires_at = ?1
			WHERE workflow = ?2 AND tag = ?3 AND (state = 'claimed' OR state = 'in_progress') AND holder = ?4 AND holder_run = ''
			  AND lease_expires_at < ?5`,
			&execOptions{Args: []any{now + TaskLease.Milliseconds(), k.Workflow, k.Tag, k.Name,
				now + (TaskLease - leaseRenewSlack).Milliseconds()}})
	})
}

// renewRunLeases renews, inside a heartbeat's transaction, the leases run
// holds. It writes only when a lease has used up leaseRenewSlack, so a
// chatty run's heartbeats rarely touch the tasks table.
func renewRunLeases(conn querier, runID string, now int64) error {
	return conn.execute(`UPDATE tasks SET lease_expires_at = ?1
		WHERE holder_run = ?2 AND holder_run <> '' AND (state = 'claimed' OR state = 'in_progress') AND lease_expires_at < ?3`,
		&execOptions{Args: []any{now + TaskLease.Milliseconds(), runID, now + (TaskLease - leaseRenewSlack).Milliseconds()}})
}

// checkActor refuses an agent that is not a member of its scope, and a
// run that has already ended (a lease must belong to a live run).
func checkActor(conn querier, a TaskActor) (Agent, error) {
	me, err := getAgent(conn, a.AgentKey)
	if err != nil || a.Run == "" {
		return me, err
	}
	state := ""
	err = conn.execute(`SELECT state FROM runs WHERE id = ?`, &execOptions{Args: []any{a.Run},
		ResultFunc: func(st row) error {
			state = st.ColumnText(0)
			return nil
		}})
	if err == nil && state != string(contract.RunRunning) && state != string(contract.RunQueued) {
		err = contract.Errorf(contract.CodeConflict, "your run %s has ended, so it cannot hold a task", a.Run)
	}
	return me, err
}

// heldTask loads a task a is about to act on (`what` it), which a must
// hold; anything else is refused with what the task's state says to do.
func heldTask(conn querier, a TaskActor, id, what string) (Task, error) {
	if _, err := checkActor(conn, a); err != nil {
		return Task{}, err
	}
	id = TaskID(id)
	if id == "" {
		return Task{}, contract.Errorf(contract.CodeInvalid, "id is empty: name the task, e.g. task-3")
	}
	t, err := getTask(conn, a.Scope(), id)
	if err != nil {
		return t, err
	}
	switch {
	case t.State == contract.TaskPending:
		return t, contract.Errorf(contract.CodeConflict, "%s is pending, not held by anyone: claim it with task_claim first", t.ID)
	case t.State == contract.TaskCompleted:
		return t, contract.Errorf(contract.CodeConflict, "%s is already completed (by %s): nothing is left to do on it; task_list shows what is", t.ID, t.Holder)
	case t.State == contract.TaskFailed:
		return t, contract.Errorf(contract.CodeConflict, "%s has already failed (%s): create a new task to try again", t.ID, OneLine(t.Error, 200))
	case t.State == contract.TaskCancelled:
		return t, contract.Errorf(contract.CodeConflict, "%s was cancelled (%s): stop working on it; task_list shows what is left", t.ID, OneLine(t.Error, 200))
	case t.Holder != a.Name:
		return t, contract.Errorf(contract.CodePermission, "%s is held by %s: only the holder may %s it", t.ID, t.Holder, what)
	}
	return t, nil
}

// holdTask puts t in state, held by a with a fresh lease for a's run (the
// caller's current run, should an earlier run of the same agent have
// taken it).
func holdTask(conn querier, t *Task, a TaskActor, state contract.TaskState, now int64) error {
	expires := now + TaskLease.Milliseconds()
	err := conn.execute(`UPDATE tasks SET state = ?, holder = ?, holder_run = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?`,
		&execOptions{Args: []any{state, a.Name, a.Run, expires, now, t.ID}})
	if err != nil {
		return err
	}
	t.State, t.Holder, t.HolderRun, t.LeaseExpiresAt, t.UpdatedAt = state, a.Name, a.Run, fromMs(expires), fromMs(now)
	return nil
}

// finishTask ends t's hold: completed or failed (the holder stays, as who
// finished it) or pending again (no holder).
func finishTask(conn querier, t *Task, state contract.TaskState, result, errMsg string, now int64) error {
	holder := t.Holder
	if state == contract.TaskPending {
		holder = ""
	}
	err := conn.execute(`UPDATE tasks SET state = ?, holder = ?, holder_run = '', lease_expires_at = 0,
		result = ?, error = ?, updated_at = ? WHERE id = ?`,
		&execOptions{Args: []any{state, holder, result, errMsg, now, t.ID}})
	if err != nil {
		return err
	}
	t.State, t.Holder, t.HolderRun, t.LeaseExpiresAt, t.Result, t.Error, t.UpdatedAt = state, holder, "", time.Time{}, result, errMsg, fromMs(now)
	return nil
}

func taskEvent(conn querier, id string, now int64, actor string, kind TaskEventKind, state contract.TaskState, note string, percent *int) error {
	var p any
	if percent != nil {
		p = *percent
	}
	return conn.execute(`INSERT INTO task_events (task_id, at, actor, kind, state, note, percent) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		&execOptions{Args: []any{id, now, actor, kind, state, note, p}})
}

// nowReady finds the tasks that done (just completed) was the last thing
// they waited for — its dependents and its parent — and who may claim
// each, the agent who completed it included: it is free now.
func nowReady(conn querier, done Task) ([]ReadyTask, error) {
	var ids []string
	err := conn.execute(`SELECT id FROM tasks WHERE id IN (SELECT task_id FROM task_deps WHERE dep_id = ?1
		UNION SELECT parent FROM tasks WHERE id = ?1 AND parent IS NOT NULL) ORDER BY n`,
		&execOptions{Args: []any{done.ID}, ResultFunc: func(st row) error {
			ids = append(ids, st.ColumnText(0))
			return nil
		}})
	if err != nil {
		return nil, err
	}
	var ready []ReadyTask
	for _, id := range ids {
		t, err := getTask(conn, Scope{Workflow: done.Workflow, Tag: done.Tag}, id)
		if err != nil {
			return nil, err
		}
		if !t.Ready() {
			continue
		}
		wake, err := wakeFor(conn, t, "")
		if err != nil {
			return nil, err
		}
		ready = append(ready, ReadyTask{Task: t, Wake: wake})
	}
	return ready, nil
}

// wakeIfReady is who a task back on the board wakes: nobody while it
// still waits for something.
func wakeIfReady(conn querier, t Task, exclude string) ([]string, error) {
	if !t.Ready() {
		return nil, nil
	}
	return wakeFor(conn, t, exclude)
}

// wakeFor is who a ready task wakes: its assignee, or the members that are
// idle or running and hold no task (a running one sees it at its next
// run), only those with the task's role when it has one; never exclude.
func wakeFor(conn querier, t Task, exclude string) ([]string, error) {
	if t.Assignee != "" {
		if t.Assignee == exclude {
			return nil, nil
		}
		return []string{t.Assignee}, nil
	}
	var names []string
	err := conn.execute(`SELECT a.name, a.roles FROM agents a
		WHERE a.workflow = ?1 AND a.tag = ?2 AND (a.state = 'idle' OR a.state = 'running') AND a.name <> ?3
		  AND NOT EXISTS (SELECT 1 FROM tasks h WHERE h.workflow = ?1 AND h.tag = ?2 AND h.holder = a.name
		                  AND (h.state = 'claimed' OR h.state = 'in_progress'))
		ORDER BY a.name`,
		&execOptions{Args: []any{t.Workflow, t.Tag, exclude}, ResultFunc: func(st row) error {
			if t.Role != "" { // a task with a role wakes only who has it
				roles, err := parseRoles(st.ColumnText(1))
				if err != nil || !slices.Contains(roles, t.Role) {
					return err
				}
			}
			names = append(names, st.ColumnText(0))
			return nil
		}})
	return names, err
}

// waitingFor lists the open tasks that wait for id: its dependents and
// its parent.
func waitingFor(conn querier, id string) ([]string, error) {
	var ids []string
	err := conn.execute(`SELECT t.id, t.n FROM task_deps d JOIN tasks t ON t.id = d.task_id
		WHERE d.dep_id = ?1 AND t.state <> 'completed' AND t.state <> 'failed' AND t.state <> 'cancelled'
		UNION SELECT p.id, p.n FROM tasks c JOIN tasks p ON p.id = c.parent
		WHERE c.id = ?1 AND p.state <> 'completed' AND p.state <> 'failed' AND p.state <> 'cancelled'
		ORDER BY 2`,
		&execOptions{Args: []any{id}, ResultFunc: func(st row) error {
			ids = append(ids, st.ColumnText(0))
			return nil
		}})
	return ids, err
}

// describeTasks names tasks with their state and holder, for errors:
// "task-1 (in_progress, held by alice), task-2 (pending)".
func describeTasks(conn querier, s Scope, ids []string) (string, error) {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		t, err := getTask(conn, s, id)
		if err != nil {
			return "", err
		}
		d := fmt.Sprintf("%s (%s", t.ID, t.State)
		if t.State.Held() {
			d += ", held by " + t.Holder
		}
		parts = append(parts, d+")")
	}
	return strings.Join(parts, ", "), nil
}

const taskColumns = `id, workflow, tag, title, description, priority, coalesce(parent, ''), assignee, created_by, state,
	holder, holder_run, lease_expires_at, percent, result, error, retries, max_retries, created_at, updated_at, role, artifacts`

func scanTask(s row) (Task, error) {
	t := Task{
		ID: s.ColumnText(0), Workflow: s.ColumnText(1), Tag: s.ColumnText(2), Title: s.ColumnText(3),
		Description: s.ColumnText(4), Priority: s.ColumnInt(5), Parent: s.ColumnText(6), Assignee: s.ColumnText(7),
		CreatedBy: s.ColumnText(8), Holder: s.ColumnText(10), HolderRun: s.ColumnText(11),
		LeaseExpiresAt: msOrZero(s.ColumnInt64(12)), Result: s.ColumnText(14), Error: s.ColumnText(15),
		Retries: s.ColumnInt(16), MaxRetries: s.ColumnInt(17), CreatedAt: fromMs(s.ColumnInt64(18)), UpdatedAt: fromMs(s.ColumnInt64(19)),
		Role: s.ColumnText(20),
	}
	artifacts, err := parseRoles(s.ColumnText(21))
	if err != nil {
		return t, contract.Errorf(contract.CodeInternal, "task %s in the database: artifacts: %w", t.ID, err)
	}
	t.Artifacts = artifacts
	if s.ColumnType(13) != sqlite.TypeNull {
		p := s.ColumnInt(13)
		t.Percent = &p
	}
	state, err := contract.ParseTaskState(s.ColumnText(9))
	if err != nil {
		return t, contract.Errorf(contract.CodeInternal, "task %s in the database: %w", t.ID, err)
	}
	t.State = state
	return t, nil
}

// getTask loads one task of s with its dependencies and what it waits for.
func getTask(conn querier, s Scope, id string) (Task, error) {
	var t Task
	found := false
	err := conn.execute(`SELECT `+taskColumns+` FROM tasks WHERE id = ? AND workflow = ? AND tag = ?`,
		&execOptions{Args: []any{id, s.Workflow, s.Tag}, ResultFunc: func(st row) (err error) {
			found = true
			t, err = scanTask(st)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "task %s not found in %s: task_list (or `agent-worker tasks %s`) shows its ids", id, s, s)
	}
	if err != nil {
		return Task{}, err
	}
	err = conn.execute(`SELECT d.dep_id, x.state <> 'completed' FROM task_deps d JOIN tasks x ON x.id = d.dep_id
		WHERE d.task_id = ? ORDER BY x.n`,
		&execOptions{Args: []any{id}, ResultFunc: func(st row) error {
			t.DependsOn = append(t.DependsOn, st.ColumnText(0))
			if st.ColumnBool(1) {
				t.WaitingOn = append(t.WaitingOn, st.ColumnText(0))
			}
			return nil
		}})
	if err != nil {
		return Task{}, err
	}
	err = conn.execute(`SELECT id, state <> 'completed' AND state <> 'cancelled' FROM tasks WHERE parent = ? ORDER BY n`,
		&execOptions{Args: []any{id}, ResultFunc: func(st row) error {
			t.Subtasks = append(t.Subtasks, st.ColumnText(0))
			if st.ColumnBool(1) {
				t.WaitingOn = append(t.WaitingOn, st.ColumnText(0))
			}
			return nil
		}})
	return t, err
}

// listTasks loads every task of s, oldest first, in three statements
// however large the board.
func listTasks(conn querier, s Scope) ([]Task, error) {
	var ts []Task
	at := map[string]int{}
	err := conn.execute(`SELECT `+taskColumns+` FROM tasks WHERE workflow = ? AND tag = ? ORDER BY n`,
		&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			t, err := scanTask(st)
			at[t.ID] = len(ts)
			ts = append(ts, t)
			return err
		}})
	if err != nil {
		return nil, err
	}
	err = conn.execute(`SELECT d.task_id, d.dep_id FROM task_deps d JOIN tasks t ON t.id = d.task_id JOIN tasks x ON x.id = d.dep_id
		WHERE t.workflow = ? AND t.tag = ? ORDER BY t.n, x.n`,
		&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			t, dep := &ts[at[st.ColumnText(0)]], st.ColumnText(1)
			t.DependsOn = append(t.DependsOn, dep)
			if ts[at[dep]].State != contract.TaskCompleted {
				t.WaitingOn = append(t.WaitingOn, dep)
			}
			return nil
		}})
	for _, c := range ts {
		if c.Parent == "" {
			continue
		}
		p := &ts[at[c.Parent]]
		p.Subtasks = append(p.Subtasks, c.ID)
		if c.State != contract.TaskCompleted && c.State != contract.TaskCancelled {
			p.WaitingOn = append(p.WaitingOn, c.ID)
		}
	}
	return ts, err
}

func taskHistory(conn querier, id string) ([]TaskEvent, error) {
	var ev []TaskEvent
	err := conn.execute(`SELECT at, actor, kind, state, note, percent FROM task_events WHERE task_id = ? ORDER BY rowid`,
		&execOptions{Args: []any{id}, ResultFunc: func(st row) error {
			e := TaskEvent{At: fromMs(st.ColumnInt64(0)), Actor: st.ColumnText(1), Kind: TaskEventKind(st.ColumnText(2)),
				State: contract.TaskState(st.ColumnText(3)), Note: st.ColumnText(4)}
			if st.ColumnType(5) != sqlite.TypeNull {
				p := st.ColumnInt(5)
				e.Percent = &p
			}
			ev = append(ev, e)
			return nil
		}})
	return ev, err
}

func taskStateNames() []string {
	out := make([]string, len(contract.TaskStates))
	for i, s := range contract.TaskStates {
		out[i] = string(s)
	}
	return out
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// OneLine shortens s to one line of at most n characters, for channel
// lines, errors and tool results that quote an agent's text.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// RoleGap is a role that open tasks of a scope ask for and no agent of
// the scope has: nobody can claim them until one does (status warns).
type RoleGap struct {
	Scope Scope
	Role  string
	Tasks []string
}

// RoleGaps lists every RoleGap, by scope and role.
func (db *DB) RoleGaps(ctx context.Context) ([]RoleGap, error) {
	var gaps []RoleGap
	err := db.snapshot(ctx, func(conn querier) error {
		has := map[Scope]map[string]bool{}
		err := conn.execute(`SELECT workflow, tag, roles FROM agents WHERE roles <> '[]' AND state <> 'stopped'`,
			&execOptions{ResultFunc: func(st row) error {
				s := Scope{Workflow: st.ColumnText(0), Tag: st.ColumnText(1)}
				roles, err := parseRoles(st.ColumnText(2))
				if err != nil {
					return err
				}
				if has[s] == nil {
					has[s] = map[string]bool{}
				}
				for _, r := range roles {
					has[s][r] = true
				}
				return nil
			}})
		if err != nil {
			return err
		}
		return conn.execute(`SELECT workflow, tag, role, id FROM tasks
			WHERE role <> '' AND state <> 'completed' AND state <> 'failed' AND state <> 'cancelled'
			ORDER BY workflow, tag, role, n`,
			&execOptions{ResultFunc: func(st row) error {
				s, role := Scope{Workflow: st.ColumnText(0), Tag: st.ColumnText(1)}, st.ColumnText(2)
				if has[s][role] {
					return nil
				}
				if n := len(gaps); n > 0 && gaps[n-1].Scope == s && gaps[n-1].Role == role {
					gaps[n-1].Tasks = append(gaps[n-1].Tasks, st.ColumnText(3))
					return nil
				}
				gaps = append(gaps, RoleGap{Scope: s, Role: role, Tasks: []string{st.ColumnText(3)}})
				return nil
			}})
	})
	return gaps, err
}
