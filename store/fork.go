package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Forking a team (issue 46, item 4): a new tag of a workflow begins from
// the state its source had when one message of the channel was posted.
// The fork point is that message's seq; "as of the fork point" means at
// that message's created_at, the clock the task board and the runs' ends
// are stamped with in the same transactions as the lines they post.

// ForkPoint is where a fork begins: the message at seq in its source's
// channel and how many messages the channel holds up to and including it.
type ForkPoint struct {
	Seq int64
	At  time.Time
	// Messages counts the channel's messages with seq ≤ Seq: what the
	// fork's channel starts with.
	Messages int
}

// ForkSeed is what SeedFork copied into the fork.
type ForkSeed struct {
	ForkPoint
	// Seqs maps each copied message's seq in the source to its seq in
	// the fork, in order.
	Seqs [][2]int64
	// Tasks maps each copied task's id in the source to its id in the
	// fork (task ids are unique across scopes, so the fork's are new).
	Tasks map[string]string
	// Cursors is each fork agent's inbox read position, a seq of the fork.
	Cursors map[string]int64
}

// GetForkPoint checks that seq is a message of from's channel and says
// where a fork there begins; a seq that is not is refused with
// contract.CodeInvalid, naming the channel's range.
func (db *DB) GetForkPoint(ctx context.Context, from Scope, seq int64) (ForkPoint, error) {
	var p ForkPoint
	err := db.read(ctx, func(conn querier) (err error) {
		p, err = forkPoint(conn, from, seq)
		return err
	})
	return p, err
}

func forkPoint(conn querier, from Scope, seq int64) (ForkPoint, error) {
	p := ForkPoint{Seq: seq}
	found := false
	err := conn.execute(`SELECT created_at FROM messages WHERE seq = ? AND workflow = ? AND tag = ?`,
		&execOptions{Args: []any{seq, from.Workflow, from.Tag}, ResultFunc: func(s row) error {
			p.At, found = fromMs(s.ColumnInt64(0)), true
			return nil
		}})
	if err != nil {
		return ForkPoint{}, err
	}
	if !found {
		var lo, hi, n int64
		err := conn.execute(`SELECT coalesce(min(seq), 0), coalesce(max(seq), 0), count(*) FROM messages WHERE workflow = ? AND tag = ?`,
			&execOptions{Args: []any{from.Workflow, from.Tag}, ResultFunc: func(s row) error {
				lo, hi, n = s.ColumnInt64(0), s.ColumnInt64(1), s.ColumnInt64(2)
				return nil
			}})
		if err != nil {
			return ForkPoint{}, err
		}
		if n == 0 {
			return ForkPoint{}, contract.Errorf(contract.CodeInvalid, "seq %d: the channel of %s has no messages yet: there is nothing to fork from", seq, from)
		}
		return ForkPoint{}, contract.Errorf(contract.CodeInvalid, "seq %d is not a message of %s: its %d messages have seqs from %d to %d (`agent-worker peek %s` shows them with their #seq)",
			seq, from, n, lo, hi, from)
	}
	n, err := count(conn, `SELECT count(*) FROM messages WHERE workflow = ? AND tag = ? AND seq <= ?`, from.Workflow, from.Tag, seq)
	p.Messages = n
	return p, err
}

// forkMessage is a source message as SeedFork copies it.
type forkMessage struct {
	seq                                          int64
	sender, content, kind, to, recipients, resID string
	createdAt                                    int64
}

// forkTask is a source task as SeedFork copies it.
type forkTask struct {
	id, title, description, parent, assignee, role, createdBy string
	priority, maxRetries                                      int
	state, holder, result, errMsg, artifacts                  string
	createdAt, updatedAt                                      int64
}

// forkEvent is a line of a source task's history up to the fork point.
type forkEvent struct {
	at                       int64
	actor, kind, state, note string
	percent                  *int
}

// taskRef finds task ids in message text, so that the fork's channel
// names the fork's tasks.
var taskRef = regexp.MustCompile(`\btask-[0-9]+\b`)

// SeedFork copies the state of from at seq into to, in one transaction:
// the channel's messages up to and including seq (new seqs, in order,
// with their times, senders, kinds and resources; inbox rows for the
// fork's agents), the task board as it was at the fork point (tasks
// created later are left out, state changes after it undone from the
// task history, a task held then is pending again: its run is not in the
// fork) and each fork agent's inbox cursor as its succeeded runs had
// acknowledged it at the fork point. Task ids in copied messages are
// rewritten to the fork's. to must exist with its agents and an empty
// channel; nothing is written if any step fails.
func (db *DB) SeedFork(ctx context.Context, from, to Scope, seq int64) (ForkSeed, error) {
	var out ForkSeed
	err := db.write(ctx, func(conn querier) error {
		out = ForkSeed{Tasks: map[string]string{}, Cursors: map[string]int64{}}
		if _, err := getWorkflow(conn, from.Workflow, from.Tag); err != nil {
			return err
		}
		if _, err := getWorkflow(conn, to.Workflow, to.Tag); err != nil {
			return err
		}
		if n, err := count(conn, `SELECT count(*) FROM messages WHERE workflow = ? AND tag = ?`, to.Workflow, to.Tag); err != nil {
			return err
		} else if n > 0 {
			return contract.Errorf(contract.CodeConflict, "%s already has %d messages: a fork starts from an empty channel", to, n)
		}
		p, err := forkPoint(conn, from, seq)
		if err != nil {
			return err
		}
		out.ForkPoint = p
		at := p.At.UnixMilli()
		members, err := memberNames(conn, to)
		if err != nil {
			return err
		}
		if err := forkTasks(conn, from, to, at, out.Tasks); err != nil {
			return err
		}
		if out.Seqs, err = forkMessages(conn, from, to, seq, members, out.Tasks); err != nil {
			return err
		}
		return forkCursors(conn, from, to, seq, at, db.nowMs(), members, out.Seqs, out.Cursors)
	})
	if err != nil {
		return ForkSeed{}, err
	}
	return out, nil
}

// forkMessages copies from's messages up to seq into to and returns the
// seq map.
func forkMessages(conn querier, from, to Scope, seq int64, members []string, tasks map[string]string) ([][2]int64, error) {
	var ms []forkMessage
	err := conn.execute(`SELECT seq, sender, content, kind, coalesce(to_agent, ''), recipients, coalesce(resource_id, ''), created_at
		FROM messages WHERE workflow = ? AND tag = ? AND seq <= ? ORDER BY seq`,
		&execOptions{Args: []any{from.Workflow, from.Tag, seq}, ResultFunc: func(s row) error {
			ms = append(ms, forkMessage{seq: s.ColumnInt64(0), sender: s.ColumnText(1), content: s.ColumnText(2), kind: s.ColumnText(3),
				to: s.ColumnText(4), recipients: s.ColumnText(5), resID: s.ColumnText(6), createdAt: s.ColumnInt64(7)})
			return nil
		}})
	if err != nil {
		return nil, err
	}
	seqs := make([][2]int64, 0, len(ms))
	for _, m := range ms {
		resID := ""
		if m.resID != "" {
			if resID, err = forkResource(conn, m.resID, to); err != nil {
				return nil, err
			}
		}
		content := taskRef.ReplaceAllStringFunc(m.content, func(id string) string {
			if n, ok := tasks[id]; ok {
				return n
			}
			return id
		})
		var newSeq int64
		err := conn.execute(insertMessageReturningSQL, &execOptions{
			Args:       []any{newID("msg_"), to.Workflow, to.Tag, m.sender, content, m.kind, m.to, m.recipients, resID, m.createdAt, ""}, // a fork is traced afresh
			ResultFunc: func(s row) error { newSeq = s.ColumnInt64(0); return nil }})
		if err != nil {
			return nil, fmt.Errorf("copy message %d: %w", m.seq, err)
		}
		seqs = append(seqs, [2]int64{m.seq, newSeq})
		var rcpt []string
		if err := json.Unmarshal([]byte(m.recipients), &rcpt); err != nil {
			return nil, fmt.Errorf("message %d: recipients: %w", m.seq, err)
		}
		for _, a := range dedupe(rcpt) {
			if a == m.sender || !slices.Contains(members, a) {
				continue
			}
			if err := conn.execute(`INSERT INTO message_recipients (workflow, tag, agent, seq) VALUES (?, ?, ?, ?)`,
				&execOptions{Args: []any{to.Workflow, to.Tag, a, newSeq}}); err != nil {
				return nil, err
			}
		}
	}
	return seqs, nil
}

// forkResource copies resource id into to and returns the copy's id.
func forkResource(conn querier, id string, to Scope) (string, error) {
	r, found := NewResource{Workflow: to.Workflow, Tag: to.Tag}, false
	var at int64
	err := conn.execute(`SELECT type, content, created_by, created_at FROM resources WHERE id = ?`,
		&execOptions{Args: []any{id}, ResultFunc: func(s row) error {
			r.Type, r.Content, r.CreatedBy, at, found = s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), s.ColumnInt64(3), true
			return nil
		}})
	if err != nil || !found {
		return "", err // a resource gone since: the message keeps its text
	}
	res, err := insertResource(conn, r, at)
	return res.ID, err
}

// forkTasks copies from's task board as it was at the fork point (unix
// ms) into to, filling ids with the old → new task ids.
func forkTasks(conn querier, from, to Scope, at int64, ids map[string]string) error {
	var ts []forkTask
	err := conn.execute(`SELECT id, title, description, coalesce(parent, ''), assignee, role, created_by, priority, max_retries,
			state, holder, result, error, artifacts, created_at, updated_at
		FROM tasks WHERE workflow = ? AND tag = ? AND created_at <= ? ORDER BY n`,
		&execOptions{Args: []any{from.Workflow, from.Tag, at}, ResultFunc: func(s row) error {
			ts = append(ts, forkTask{id: s.ColumnText(0), title: s.ColumnText(1), description: s.ColumnText(2), parent: s.ColumnText(3),
				assignee: s.ColumnText(4), role: s.ColumnText(5), createdBy: s.ColumnText(6), priority: s.ColumnInt(7), maxRetries: s.ColumnInt(8),
				state: s.ColumnText(9), holder: s.ColumnText(10), result: s.ColumnText(11), errMsg: s.ColumnText(12), artifacts: s.ColumnText(13),
				createdAt: s.ColumnInt64(14), updatedAt: s.ColumnInt64(15)})
			return nil
		}})
	if err != nil {
		return err
	}
	for _, t := range ts {
		var evs []forkEvent
		later := 0
		err := conn.execute(`SELECT at, actor, kind, state, note, percent FROM task_events WHERE task_id = ? ORDER BY rowid`,
			&execOptions{Args: []any{t.id}, ResultFunc: func(s row) error {
				if s.ColumnInt64(0) > at {
					later++
					return nil
				}
				e := forkEvent{at: s.ColumnInt64(0), actor: s.ColumnText(1), kind: s.ColumnText(2), state: s.ColumnText(3), note: s.ColumnText(4)}
				if s.ColumnType(5) != sqlite.TypeNull {
					p := s.ColumnInt(5)
					e.percent = &p
				}
				evs = append(evs, e)
				return nil
			}})
		if err != nil {
			return err
		}
		state, percent, retries := contract.TaskState(t.state), (*int)(nil), 0
		for _, e := range evs {
			state = contract.TaskState(e.state)
			if e.percent != nil {
				percent = e.percent
			}
			if TaskEventKind(e.kind) == TaskEventRetried {
				retries++
			}
		}
		updated := t.updatedAt
		if later > 0 {
			updated = t.createdAt
			if len(evs) > 0 {
				updated = evs[len(evs)-1].at
			}
		}
		holder, result, errMsg, artifacts := t.holder, t.result, t.errMsg, t.artifacts
		if !state.Done() {
			// Held then by a run the fork does not have: back on the board,
			// as after a lost lease.
			state, holder, result, errMsg, artifacts = contract.TaskPending, "", "", "", "[]"
		} else if later > 0 && contract.TaskState(t.state) != state {
			result, errMsg, artifacts = "", "", "[]"
		}
		n, err := count(conn, `INSERT INTO counters (name, value) VALUES ('`+taskCounterID+`', 1)
			ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`)
		if err != nil {
			return err
		}
		id := taskIDPrefix + strconv.Itoa(n)
		ids[t.id] = id
		var pct any
		if percent != nil {
			pct = *percent
		}
		err = conn.execute(`INSERT INTO tasks (id, n, workflow, tag, title, description, priority, parent, assignee, role, created_by,
				state, holder, percent, result, error, artifacts, retries, max_retries, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{id, n, to.Workflow, to.Tag, t.title, t.description, t.priority, ids[t.parent], t.assignee, t.role, t.createdBy,
				string(state), holder, pct, result, errMsg, artifacts, retries, t.maxRetries, t.createdAt, updated}})
		if err != nil {
			return fmt.Errorf("copy task %s: %w", t.id, err)
		}
		for _, e := range evs {
			if err := taskEvent(conn, id, e.at, e.actor, TaskEventKind(e.kind), contract.TaskState(e.state), e.note, e.percent); err != nil {
				return err
			}
		}
	}
	// Dependencies, once every copied task has its new id; one on a task
	// created after the fork point cannot exist (depends_on names tasks
	// that exist), but is skipped rather than trusted.
	for _, t := range ts {
		var deps []string
		err := conn.execute(`SELECT dep_id FROM task_deps WHERE task_id = ? ORDER BY dep_id`,
			&execOptions{Args: []any{t.id}, ResultFunc: func(s row) error {
				deps = append(deps, s.ColumnText(0))
				return nil
			}})
		if err != nil {
			return err
		}
		for _, d := range deps {
			if ids[d] == "" {
				continue
			}
			if err := conn.execute(`INSERT INTO task_deps (task_id, dep_id) VALUES (?, ?)`,
				&execOptions{Args: []any{ids[t.id], ids[d]}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// forkCursors sets each fork agent's inbox cursor to what the agent's
// succeeded runs in from had acknowledged by the fork point (at, unix
// ms), mapped to the fork's seqs: a run settles its inbox through
// inbox_until_seq in the transaction that ends it.
func forkCursors(conn querier, from, to Scope, seq, at, now int64, members []string, seqs [][2]int64, out map[string]int64) error {
	for _, a := range members {
		var acked int64
		err := conn.execute(`SELECT coalesce(max(inbox_until_seq), 0) FROM runs
			WHERE workflow = ? AND tag = ? AND agent = ? AND state = 'succeeded' AND ended_at > 0 AND ended_at <= ?`,
			&execOptions{Args: []any{from.Workflow, from.Tag, a, at}, ResultFunc: func(s row) error {
				acked = s.ColumnInt64(0)
				return nil
			}})
		if err != nil {
			return err
		}
		acked = min(acked, seq)
		// The fork's cursor is the fork seq of the newest copied message
		// at or below the source's cursor.
		var cur int64
		for _, p := range seqs {
			if p[0] > acked {
				break
			}
			cur = p[1]
		}
		if cur == 0 {
			continue
		}
		out[a] = cur
		err = conn.execute(`INSERT INTO inbox_ack (workflow, tag, agent, cursor, updated_at) VALUES (?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{to.Workflow, to.Tag, a, cur, now}})
		if err != nil {
			return err
		}
	}
	return nil
}
