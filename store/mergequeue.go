package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// The merge queue's rows. The rules of what may follow what are here, in
// the one write that changes an entry, so that the engine (host/worktrees)
// and a dequeue racing it agree: a transition names the state it expects
// and reports whether the entry was still in it.

// queueCounterID is the merge queue's row in counters: ids are mq-N.
const queueCounterID = "merge_queue"

// MaxQueueOutput is how much of a check's output is kept: its tail.
const MaxQueueOutput = 64 << 10

// QueueEntry is one integrate request waiting for, or done with, the
// merge queue of Workflow:Tag's Base branch.
type QueueEntry struct {
	ID                  string
	Workflow, Tag, Base string
	// Repo is the workspace repository whose queue it is in ("" for the
	// workflow's own).
	Repo                 string
	Agent, Branch, By    string
	State                tools.QueueState
	Seq                  int64
	Head                 string
	BaseCommit, Commit   string
	Command, Output      string
	Reason               string
	Files                []string
	Attempts             int
	CreatedAt, StartedAt time.Time
	EndedAt              time.Time
}

// Key is the entry's agent.
func (e QueueEntry) Key() AgentKey { return AgentKey{Workflow: e.Workflow, Tag: e.Tag, Name: e.Agent} }

// Queue is the entry's queue.
func (e QueueEntry) Queue() QueueKey {
	return QueueKey{Workflow: e.Workflow, Tag: e.Tag, Repo: e.Repo, Base: e.Base}
}

// QueueKey names one merge queue: a base branch of a workflow instance's
// repository (Repo "" for its own, else one of workspace.repos).
type QueueKey struct{ Workflow, Tag, Repo, Base string }

// Scope is the queue's workflow:tag.
func (k QueueKey) Scope() Scope { return Scope{Workflow: k.Workflow, Tag: k.Tag} }

// QueueCheck is one check command's run for a batch.
type QueueCheck struct {
	Batch      []string
	Command    string
	ExitCode   int
	TimedOut   bool
	DurationMS int64
	Output     string
	At         time.Time
}

const queueColumns = `id, workflow, tag, base, agent, branch, requested_by, state, seq, head, base_commit, commit_sha,
	command, output, reason, files_json, attempts, created_at, started_at, ended_at, repo`

func scanQueueEntry(s row) (QueueEntry, error) {
	e := QueueEntry{ID: s.ColumnText(0), Workflow: s.ColumnText(1), Tag: s.ColumnText(2), Base: s.ColumnText(3),
		Agent: s.ColumnText(4), Branch: s.ColumnText(5), By: s.ColumnText(6), State: tools.QueueState(s.ColumnText(7)),
		Seq: s.ColumnInt64(8), Head: s.ColumnText(9), BaseCommit: s.ColumnText(10), Commit: s.ColumnText(11),
		Command: s.ColumnText(12), Output: s.ColumnText(13), Reason: s.ColumnText(14), Attempts: s.ColumnInt(16),
		CreatedAt: fromMs(s.ColumnInt64(17))}
	if ms := s.ColumnInt64(18); ms != 0 {
		e.StartedAt = fromMs(ms)
	}
	if ms := s.ColumnInt64(19); ms != 0 {
		e.EndedAt = fromMs(ms)
	}
	e.Repo = s.ColumnText(20)
	err := json.Unmarshal([]byte(s.ColumnText(15)), &e.Files)
	return e, err
}

// Enqueue puts e (Workflow, Tag, Base, Agent, Branch, By, Head) at the end
// of its queue and returns it with its id and the number of pending
// entries ahead of it. A branch already pending in that queue is a
// conflict naming its entry: one request per branch is enough, since the
// queue merges the branch as it is when its turn comes.
func (db *DB) Enqueue(ctx context.Context, e QueueEntry) (QueueEntry, int, error) {
	ahead := 0
	err := db.write(ctx, func(conn querier) error {
		var dup *QueueEntry
		err := conn.execute(`SELECT `+queueColumns+` FROM merge_queue WHERE workflow = ? AND tag = ? AND repo = ? AND base = ? AND branch = ?
			AND state IN ('queued', 'checking', 'landing') ORDER BY seq LIMIT 1`,
			&execOptions{Args: []any{e.Workflow, e.Tag, e.Repo, e.Base, e.Branch}, ResultFunc: func(s row) error {
				d, err := scanQueueEntry(s)
				dup = &d
				return err
			}})
		if err != nil {
			return err
		}
		if dup != nil {
			return contract.Errorf(contract.CodeConflict, "%s is in the merge queue of %s already, as %s (%s): it is merged as it is when its turn comes; `agent-worker worktree queue` shows the queue",
				e.Branch, e.Base, dup.ID, dup.State)
		}
		n, err := count(conn, `INSERT INTO counters (name, value) VALUES ('`+queueCounterID+`', 1)
			ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`)
		if err != nil {
			return err
		}
		now := db.nowMs()
		e.ID, e.Seq, e.State, e.Files, e.CreatedAt = "mq-"+strconv.Itoa(n), int64(n), tools.QueueQueued, []string{}, fromMs(now)
		e.Attempts, e.StartedAt, e.EndedAt = 0, time.Time{}, time.Time{}
		err = conn.execute(`INSERT INTO merge_queue (id, workflow, tag, base, agent, branch, requested_by, state, seq, head, created_at, repo)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{e.ID, e.Workflow, e.Tag, e.Base, e.Agent, e.Branch, e.By, string(e.State), e.Seq, e.Head, now, e.Repo}})
		if err != nil {
			return err
		}
		ahead, err = queueAhead(conn, e)
		return err
	})
	return e, ahead, err
}

// queueAhead counts the pending entries of e's queue before it.
func queueAhead(conn querier, e QueueEntry) (int, error) {
	return count(conn, `SELECT COUNT(*) FROM merge_queue WHERE workflow = ? AND tag = ? AND repo = ? AND base = ?
		AND state IN ('queued', 'checking', 'landing') AND seq < ?`, e.Workflow, e.Tag, e.Repo, e.Base, e.Seq)
}

// GetQueueEntry returns one entry with its check runs; an unknown id is
// not found.
func (db *DB) GetQueueEntry(ctx context.Context, id string) (QueueEntry, []QueueCheck, error) {
	var e QueueEntry
	var checks []QueueCheck
	err := db.snapshot(ctx, func(conn querier) error {
		var err error
		if e, err = getQueueEntry(conn, id); err != nil {
			return err
		}
		checks = []QueueCheck{}
		return conn.execute(`SELECT batch_json, command, exit_code, timed_out, duration_ms, output, at FROM merge_queue_checks
			WHERE entry_id = ? ORDER BY n`, &execOptions{Args: []any{id}, ResultFunc: func(s row) error {
			c := QueueCheck{Command: s.ColumnText(1), ExitCode: s.ColumnInt(2), TimedOut: s.ColumnBool(3),
				DurationMS: s.ColumnInt64(4), Output: s.ColumnText(5), At: fromMs(s.ColumnInt64(6))}
			checks = append(checks, c)
			return json.Unmarshal([]byte(s.ColumnText(0)), &checks[len(checks)-1].Batch)
		}})
	})
	return e, checks, err
}

func getQueueEntry(conn querier, id string) (QueueEntry, error) {
	var e QueueEntry
	found := false
	err := conn.execute(`SELECT `+queueColumns+` FROM merge_queue WHERE id = ?`, &execOptions{Args: []any{id},
		ResultFunc: func(s row) error {
			found = true
			var err error
			e, err = scanQueueEntry(s)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "no merge queue entry %q: `agent-worker worktree queue --all` lists them", id)
	}
	return e, err
}

// QueueFilter narrows ListQueue: to a workflow:tag, to one queue, to
// pending entries unless All; Limit caps the finished ones (newest kept).
type QueueFilter struct {
	Scope *Scope
	Queue *QueueKey
	All   bool
	Limit int
}

// ListQueue returns entries in queue order: pending ones by seq, then,
// with All, the newest finished ones (at most Limit, default 50).
func (db *DB) ListQueue(ctx context.Context, f QueueFilter) ([]QueueEntry, error) {
	where, args := "1 = 1", []any{}
	if f.Scope != nil {
		where += " AND workflow = ? AND tag = ?"
		args = append(args, f.Scope.Workflow, f.Scope.Tag)
	}
	if f.Queue != nil {
		where += " AND workflow = ? AND tag = ? AND repo = ? AND base = ?"
		args = append(args, f.Queue.Workflow, f.Queue.Tag, f.Queue.Repo, f.Queue.Base)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	out := []QueueEntry{}
	scan := func(s row) error {
		e, err := scanQueueEntry(s)
		out = append(out, e)
		return err
	}
	err := db.snapshot(ctx, func(conn querier) error {
		out = out[:0]
		err := conn.execute(`SELECT `+queueColumns+` FROM merge_queue WHERE `+where+` AND state IN ('queued', 'checking', 'landing') ORDER BY seq`,
			&execOptions{Args: args, ResultFunc: scan})
		if err != nil || !f.All {
			return err
		}
		return conn.execute(`SELECT `+queueColumns+` FROM merge_queue WHERE `+where+` AND state NOT IN ('queued', 'checking', 'landing')
			ORDER BY seq DESC LIMIT `+strconv.Itoa(limit), &execOptions{Args: args, ResultFunc: scan})
	})
	return out, err
}

// PendingQueues lists the queues that have pending entries, with each
// queue's oldest pending entry first in line.
func (db *DB) PendingQueues(ctx context.Context) ([]QueueKey, error) {
	var out []QueueKey
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT workflow, tag, repo, base, MIN(seq) FROM merge_queue WHERE state IN ('queued', 'checking', 'landing')
			GROUP BY workflow, tag, repo, base ORDER BY MIN(seq)`, &execOptions{ResultFunc: func(s row) error {
			out = append(out, QueueKey{Workflow: s.ColumnText(0), Tag: s.ColumnText(1), Repo: s.ColumnText(2), Base: s.ColumnText(3)})
			return nil
		}})
	})
	return out, err
}

// QueueLengths counts each workflow:tag's pending entries, for the
// queue-length gauge.
func (db *DB) QueueLengths(ctx context.Context) (map[Scope]int, error) {
	out := map[Scope]int{}
	err := db.read(ctx, func(conn querier) error {
		clear(out)
		return conn.execute(`SELECT workflow, tag, COUNT(*) FROM merge_queue WHERE state IN ('queued', 'checking', 'landing') GROUP BY workflow, tag`,
			&execOptions{ResultFunc: func(s row) error {
				out[Scope{Workflow: s.ColumnText(0), Tag: s.ColumnText(1)}] = s.ColumnInt(2)
				return nil
			}})
	})
	return out, err
}

// PendingQueueCount is how many of scope's entries are still on their way
// (a team with some is not done).
func (db *DB) PendingQueueCount(ctx context.Context, scope Scope) (int, error) {
	n := 0
	err := db.read(ctx, func(conn querier) error {
		var err error
		n, err = count(conn, `SELECT COUNT(*) FROM merge_queue WHERE workflow = ? AND tag = ? AND state IN ('queued', 'checking', 'landing')`,
			scope.Workflow, scope.Tag)
		return err
	})
	return n, err
}

// TakeBatch moves up to n queued entries of q, in order, to checking and
// returns them; it never takes entries while one of q is checking or
// landing (the engine finishes those first).
func (db *DB) TakeBatch(ctx context.Context, q QueueKey, n int) ([]QueueEntry, error) {
	var out []QueueEntry
	err := db.write(ctx, func(conn querier) error {
		out = out[:0]
		busy, err := count(conn, `SELECT COUNT(*) FROM merge_queue WHERE workflow = ? AND tag = ? AND repo = ? AND base = ? AND state IN ('checking', 'landing')`,
			q.Workflow, q.Tag, q.Repo, q.Base)
		if err != nil || busy > 0 {
			return err
		}
		now := db.nowMs()
		return conn.execute(`UPDATE merge_queue SET state = 'checking', attempts = attempts + 1, started_at = ?
			WHERE id IN (SELECT id FROM merge_queue WHERE workflow = ? AND tag = ? AND repo = ? AND base = ? AND state = 'queued' ORDER BY seq LIMIT ? + 0)
			RETURNING `+queueColumns, &execOptions{Args: []any{now, q.Workflow, q.Tag, q.Repo, q.Base, n}, ResultFunc: func(s row) error {
			e, err := scanQueueEntry(s)
			out = append(out, e)
			return err
		}})
	})
	sortBySeq(out)
	return out, err
}

func sortBySeq(es []QueueEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Seq < es[j-1].Seq; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// SetQueueHead records the branch commit the queue merged for id.
func (db *DB) SetQueueHead(ctx context.Context, id, head string) error {
	return db.write(ctx, func(conn querier) error {
		return conn.execute(`UPDATE merge_queue SET head = ? WHERE id = ?`, &execOptions{Args: []any{head, id}})
	})
}

// MarkLanding records, before the base is moved, that entries ids (in
// chain order, ids[i] merged as commits[i]) are about to land by moving
// the base from baseCommit. It stops at the first entry that is no longer
// checking (dequeued meanwhile): every merge after it holds its branch, so
// only the entries before it may land. It returns how many it marked.
func (db *DB) MarkLanding(ctx context.Context, baseCommit string, ids, commits []string) (int, error) {
	n := 0
	err := db.write(ctx, func(conn querier) error {
		n = 0
		for i, id := range ids {
			err := conn.execute(`UPDATE merge_queue SET state = 'landing', base_commit = ?, commit_sha = ? WHERE id = ? AND state = 'checking'`,
				&execOptions{Args: []any{baseCommit, commits[i], id}})
			if err != nil {
				return err
			}
			if conn.changes() == 0 {
				return nil
			}
			n++
		}
		return nil
	})
	return n, err
}

// QueueOutcome is how an entry ended: landed with Commit, or failed (or
// removed) with Reason, and for a failed check its Command and Output.
// Line, when set, is the channel line that tells the team, posted in the
// same transaction: an outcome is never recorded without it, so no one
// sees the queue empty before the agents have their news.
type QueueOutcome struct {
	State   tools.QueueState
	Commit  string
	Command string
	Output  string
	Reason  string
	Files   []string
	Line    *NewMessage
}

// FinishQueueEntry ends entry id with o if it is in one of from; it
// reports whether it was (false: something else ended it first, and
// nothing is posted), and returns o.Line as posted.
func (db *DB) FinishQueueEntry(ctx context.Context, id string, o QueueOutcome, from ...tools.QueueState) (QueueEntry, *Message, bool, error) {
	if o.Files == nil {
		o.Files = []string{}
	}
	files, err := json.Marshal(o.Files)
	if err != nil {
		return QueueEntry{}, nil, false, err
	}
	var e QueueEntry
	var posted *Message
	changed := false
	err = db.write(ctx, func(conn querier) error {
		posted = nil
		set, args := "", []any{string(o.State)}
		if o.Commit != "" {
			set, args = ", commit_sha = ?", append(args, o.Commit)
		}
		args = append(args, o.Command, tail(o.Output, MaxQueueOutput), o.Reason, string(files), db.nowMs(), id)
		for _, s := range from {
			args = append(args, string(s))
		}
		err := conn.execute(`UPDATE merge_queue SET state = ?`+set+`, command = ?, output = ?, reason = ?, files_json = ?, ended_at = ?
			WHERE id = ? AND state IN (`+placeholders(len(from))+`)`, &execOptions{Args: args})
		if err != nil {
			return err
		}
		changed = conn.changes() > 0
		if e, err = getQueueEntry(conn, id); err != nil || !changed || o.Line == nil {
			return err
		}
		m, err := appendMessage(conn, *o.Line, db.nowMs())
		posted = &m
		return err
	})
	return e, posted, changed, err
}

// Requeue puts entries back in line, keeping their places: after a
// restart (checking), behind a culprit a bisection found, or when the
// base moved under a landing. Only entries in from move.
func (db *DB) Requeue(ctx context.Context, ids []string, from ...tools.QueueState) error {
	if len(ids) == 0 {
		return nil
	}
	return db.write(ctx, func(conn querier) error {
		args := []any{}
		for _, id := range ids {
			args = append(args, id)
		}
		for _, s := range from {
			args = append(args, string(s))
		}
		return conn.execute(`UPDATE merge_queue SET state = 'queued', base_commit = '', commit_sha = ''
			WHERE id IN (`+placeholders(len(ids))+`) AND state IN (`+placeholders(len(from))+`)`, &execOptions{Args: args})
	})
}

// EntriesIn lists every entry in one of states, oldest first: what a
// starting daemon reconciles.
func (db *DB) EntriesIn(ctx context.Context, states ...tools.QueueState) ([]QueueEntry, error) {
	out := []QueueEntry{}
	args := []any{}
	for _, s := range states {
		args = append(args, string(s))
	}
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT `+queueColumns+` FROM merge_queue WHERE state IN (`+placeholders(len(states))+`) ORDER BY seq`,
			&execOptions{Args: args, ResultFunc: func(s row) error {
				e, err := scanQueueEntry(s)
				out = append(out, e)
				return err
			}})
	})
	return out, err
}

// Dequeue removes a pending entry that is queued or being checked, as
// by, for reason, and posts line (if any) in the same transaction. An
// entry landing, landed or failed is a conflict that says so.
func (db *DB) Dequeue(ctx context.Context, id, by, reason string, line *NewMessage) (QueueEntry, *Message, error) {
	var e QueueEntry
	var posted *Message
	err := db.write(ctx, func(conn querier) error {
		posted = nil
		var err error
		if e, err = getQueueEntry(conn, id); err != nil {
			return err
		}
		if e.State != tools.QueueQueued && e.State != tools.QueueChecking {
			return contract.Errorf(contract.CodeConflict, "%s is %s: only a queued entry, or one being checked, can be removed", id, e.State)
		}
		why := "removed by " + by
		if strings.TrimSpace(reason) != "" {
			why += ": " + reason
		}
		err = conn.execute(`UPDATE merge_queue SET state = 'removed', reason = ?, ended_at = ? WHERE id = ?`,
			&execOptions{Args: []any{why, db.nowMs(), id}})
		if err != nil {
			return err
		}
		if e, err = getQueueEntry(conn, id); err != nil || line == nil {
			return err
		}
		m, err := appendMessage(conn, *line, db.nowMs())
		posted = &m
		return err
	})
	return e, posted, err
}

// AddQueueCheck records one check run for every entry of its batch.
func (db *DB) AddQueueCheck(ctx context.Context, c QueueCheck) error {
	batch, err := json.Marshal(c.Batch)
	if err != nil {
		return err
	}
	return db.write(ctx, func(conn querier) error {
		at := c.At.UnixMilli()
		if c.At.IsZero() {
			at = db.nowMs()
		}
		for _, id := range c.Batch {
			err := conn.execute(`INSERT INTO merge_queue_checks (entry_id, n, batch_json, command, exit_code, timed_out, duration_ms, output, at)
				VALUES (?1, (SELECT COALESCE(MAX(n), 0) + 1 FROM merge_queue_checks WHERE entry_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
				&execOptions{Args: []any{id, string(batch), c.Command, c.ExitCode, c.TimedOut, c.DurationMS, tail(c.Output, MaxQueueOutput), at}})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// tail keeps the last max bytes of s, cut at a line start when one is
// near.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return s
}
