package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Run is one attempt of one agent run: the record `info` and `runs` show.
type Run struct {
	ID                 string
	Agent              AgentKey
	Backend            string
	PluginSHA256       string
	Attempt            int
	State              contract.RunState
	StartedAt, EndedAt time.Time
	// InboxUntilSeq is the newest inbox seq the run was shown: what it acks
	// when it succeeds.
	InboxUntilSeq int64
	Error         string
	Usage         json.RawMessage
	// Daemon is the id of the daemon process that ran it (cluster mode
	// spreads runs over several).
	Daemon string
	// Traceparent is the W3C trace context of the run's invoke_agent span
	// ("" with tracing off): where its trace is.
	Traceparent string
}

// RunEvent is one entry of a run's transcript.
type RunEvent struct {
	N    int
	Kind string
	Data string
	At   time.Time
}

// StartRun records a run as running.
func (db *DB) StartRun(ctx context.Context, r Run) (Run, error) {
	r, _, err := db.startRun(ctx, r, false)
	return r, err
}

// StartRunWithToken records a run as running and mints the bearer token
// its plugin calls the daemon with (CreateToken), in one transaction.
func (db *DB) StartRunWithToken(ctx context.Context, r Run) (Run, string, error) {
	return db.startRun(ctx, r, true)
}

func (db *DB) startRun(ctx context.Context, r Run, withToken bool) (Run, string, error) {
	token := ""
	if withToken {
		var err error
		if token, err = newToken(); err != nil {
			return r, "", err
		}
	}
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		r.State, r.StartedAt = contract.RunRunning, fromMs(now)
		r.Daemon = db.daemon
		err := conn.execute(`INSERT INTO runs (id, agent, workflow, tag, backend, plugin_sha256,
			attempt, state, started_at, inbox_until_seq, daemon, traceparent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''))`,
			&execOptions{Args: []any{r.ID, r.Agent.Name, r.Agent.Workflow, r.Agent.Tag, r.Backend,
				r.PluginSHA256, r.Attempt, r.State, now, r.InboxUntilSeq, r.Daemon, r.Traceparent}})
		if err != nil || !withToken {
			return err
		}
		return insertToken(conn, r.Agent, r.ID, token, now)
	})
	return r, token, err
}

// FinishRun records how a run ended in one transaction. A successful run
// of the scheduler ends through SettleRun instead, which also acks and
// replies. Its plugin process may still be stopping: its workers row stays
// until RemoveWorker, after the process is gone, so a daemon that dies in
// between still finds it to reap.
func (db *DB) FinishRun(ctx context.Context, id string, state contract.RunState, errMsg string, usage json.RawMessage) error {
	defer db.forgetRunTokens(id)
	return db.write(ctx, func(conn querier) error {
		return finishRun(conn, id, state, errMsg, usage, db.nowMs())
	})
}

// finishRun records a run's end inside a caller's transaction and ends its
// tokens. The caller forgets cached tokens once it has committed.
func finishRun(conn querier, id string, state contract.RunState, errMsg string, usage json.RawMessage, now int64) error {
	if len(usage) == 0 {
		usage = json.RawMessage("{}")
	}
	err := conn.execute(`UPDATE runs SET state = ?, error = ?, usage_json = ?, ended_at = ? WHERE id = ?`,
		&execOptions{Args: []any{state, errMsg, string(usage), now, id}})
	if err != nil {
		return err
	}
	return revokeRunTokens(conn, now, id)
}

// AppendRunEvents adds events to a run's transcript in one transaction;
// the supervisor batches them so a chatty run does not cost a transaction
// per event.
func (db *DB) AppendRunEvents(ctx context.Context, runID string, events []RunEvent) error {
	if len(events) == 0 {
		return nil
	}
	return db.write(ctx, func(conn querier) error { return appendRunEvents(conn, runID, events) })
}

// appendRunEvents is AppendRunEvents in the caller's transaction.
func appendRunEvents(conn querier, runID string, events []RunEvent) error {
	for _, e := range events {
		err := conn.execute(`INSERT INTO run_events (run_id, n, kind, data, at) VALUES (?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{runID, e.N, e.Kind, e.Data, e.At.UnixMilli()}})
		if err != nil {
			return err
		}
		if err := indexRunEvent(conn, runID, e); err != nil {
			return err
		}
	}
	return nil
}

const runColumns = `id, agent, workflow, tag, backend, plugin_sha256, attempt, state, started_at, ended_at,
	inbox_until_seq, error, usage_json, daemon, coalesce(traceparent, '')`

func scanRun(s row) (Run, error) {
	r := Run{
		ID: s.ColumnText(0), Agent: AgentKey{Name: s.ColumnText(1), Workflow: s.ColumnText(2), Tag: s.ColumnText(3)},
		Backend: s.ColumnText(4), PluginSHA256: s.ColumnText(5), Attempt: s.ColumnInt(6),
		StartedAt: fromMs(s.ColumnInt64(8)), InboxUntilSeq: s.ColumnInt64(10), Error: s.ColumnText(11),
		Usage: json.RawMessage(s.ColumnText(12)), Daemon: s.ColumnText(13), Traceparent: s.ColumnText(14),
	}
	if ms := s.ColumnInt64(9); ms != 0 {
		r.EndedAt = fromMs(ms)
	}
	state, err := contract.ParseRunState(s.ColumnText(7))
	if err != nil {
		return r, contract.Errorf(contract.CodeInternal, "run %s in the database: %w", r.ID, err)
	}
	r.State = state
	return r, nil
}

// GetRun returns a run and its transcript.
func (db *DB) GetRun(ctx context.Context, id string) (Run, []RunEvent, error) {
	return db.RunSince(ctx, id, 0)
}

// RunSince returns a run and the events of its transcript after event n,
// read together, so a follower of a live run reads each event once.
func (db *DB) RunSince(ctx context.Context, id string, n int) (Run, []RunEvent, error) {
	var r Run
	var events []RunEvent
	err := db.snapshot(ctx, func(conn querier) (err error) {
		if r, err = getRunRow(conn, id); err != nil {
			return err
		}
		return conn.execute(`SELECT n, kind, data, at FROM run_events WHERE run_id = ? AND n > ? ORDER BY n`,
			&execOptions{Args: []any{id, n}, ResultFunc: func(s row) error {
				events = append(events, RunEvent{N: s.ColumnInt(0), Kind: s.ColumnText(1), Data: s.ColumnText(2), At: fromMs(s.ColumnInt64(3))})
				return nil
			}})
	})
	return r, events, err
}

// RunFilter narrows ListRuns; empty fields match anything.
type RunFilter struct {
	Agent AgentKey
	// Scope, when Agent is empty, keeps the runs of one workflow:tag; a
	// Scope with an empty Tag keeps every tag of the workflow.
	Scope Scope
	// Unsuccessful keeps only the runs that ended badly: failed,
	// cancelled or timed out.
	Unsuccessful bool
	Limit        int // 0 → 20
}

// ListRuns returns runs, newest first.
func (db *DB) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	if f.Agent.Name != "" {
		f.Scope = f.Agent.Scope()
	}
	var out []Run
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+runColumns+` FROM runs
			WHERE (?1 = '' OR agent = ?1) AND (?2 = '' OR workflow = ?2) AND (?3 = '' OR tag = ?3)
			  AND (NOT ?5 OR state IN ('failed', 'cancelled', 'timed_out'))
			ORDER BY started_at DESC, id DESC LIMIT ?4 + 0`,
			&execOptions{Args: []any{f.Agent.Name, f.Scope.Workflow, f.Scope.Tag, f.Limit, f.Unsuccessful},
				ResultFunc: func(s row) error {
					r, err := scanRun(s)
					out = append(out, r)
					return err
				}})
	})
	return out, err
}

// FailRunningRuns marks every run still recorded as running as failed with
// reason: at start-up, those are the runs a dead daemon left behind. In a
// cluster it touches only this daemon's own runs: the others' are theirs,
// or RecoverDeadDaemons's. The pseudo-run of an open live session is no
// process of the daemon's: the session goes on in its own program, so it
// is left running (the stale-session check ends it if the session died).
//
// notLive is the condition on runs.id that leaves those out.
const notLive = `id NOT IN (SELECT run_id FROM live_sessions WHERE ended_at = 0)`

func (db *DB) FailRunningRuns(ctx context.Context, reason string) (int, error) {
	defer db.tokens.forget()
	var n int
	err := db.write(ctx, func(conn querier) error {
		// Their tokens die with them, in the same transaction.
		err := conn.execute(`UPDATE agent_tokens SET revoked_at = ?1 WHERE revoked_at = 0 AND run_id IN
			(SELECT id FROM runs WHERE state IN ('queued', 'running') AND (?2 = '' OR daemon = ?2) AND `+notLive+`)`,
			&execOptions{Args: []any{db.nowMs(), db.clusterDaemon()}})
		if err != nil {
			return err
		}
		// So do their pending questions and approvals: no run waits
		// for them any more, and a retry asks again.
		err = conn.execute(`UPDATE questions SET state = ?1, answer = ?2, answered_at = ?3 WHERE state = ?4 AND run_id <> '' AND run_id IN
			(SELECT id FROM runs WHERE state IN ('queued', 'running') AND (?5 = '' OR daemon = ?5) AND `+notLive+`)`,
			&execOptions{Args: []any{QuestionCancelled, RunEndedDaemonStopped, db.nowMs(), QuestionPending, db.clusterDaemon()}})
		if err != nil {
			return err
		}
		err = conn.execute(`UPDATE runs SET state = 'failed', error = ?1, ended_at = ?2
			WHERE state IN ('queued', 'running') AND (?3 = '' OR daemon = ?3) AND `+notLive+``,
			&execOptions{Args: []any{reason, db.nowMs(), db.clusterDaemon()}})
		n = conn.changes()
		return err
	})
	return n, err
}

// WorkerState says what a recorded plugin process is doing.
type WorkerState string

// Worker states: a process serving a run, or a warm spare waiting for one
// (its RunID is then the spare's own id, until a run claims it).
const (
	WorkerRunning WorkerState = "running"
	WorkerSpare   WorkerState = "spare"
)

// Worker is a live plugin process, recorded so that a restarted daemon can
// find and kill what a crashed one left running.
type Worker struct {
	RunID        string
	State        WorkerState // "" is WorkerRunning
	PID, PGID    int
	PluginPath   string
	PluginSHA256 string
	StartedAt    time.Time
	// HeartbeatAt is when the run last proved alive: an event batch, or
	// the plugin answering the supervisor's ping.
	HeartbeatAt time.Time
	// Agent and Backend come from the worker's run (zero if it has none),
	// so that status can say whose run a worker is.
	Agent   AgentKey
	Backend string
	// Daemon is the id of the daemon that started the process.
	Daemon string
}

// AddWorker records a started plugin process.
func (db *DB) AddWorker(ctx context.Context, w Worker) error {
	if w.State == "" {
		w.State = WorkerRunning
	}
	return db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		return conn.execute(`INSERT INTO workers (run_id, pid, pgid, plugin_path, plugin_sha256, state, started_at, heartbeat_at, daemon)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET pid = excluded.pid, pgid = excluded.pgid,
			plugin_path = excluded.plugin_path, plugin_sha256 = excluded.plugin_sha256, state = excluded.state,
			started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, daemon = excluded.daemon`,
			&execOptions{Args: []any{w.RunID, w.PID, w.PGID, w.PluginPath, w.PluginSHA256, string(w.State), now, now, db.daemon}})
	})
}

// ClaimSpare makes the row of warm spare spareID the row of run runID: the
// same process, now serving that run, reaped and removed with it. A spare
// already claimed (or gone) is not found, so one process never gets two
// runs.
func (db *DB) ClaimSpare(ctx context.Context, spareID, runID string) error {
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE workers SET run_id = ?, state = ?, heartbeat_at = ? WHERE run_id = ? AND state = ?`,
			&execOptions{Args: []any{runID, string(WorkerRunning), db.nowMs(), spareID, string(WorkerSpare)}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "no waiting spare %s", spareID)
		}
		return err
	})
}

// Heartbeat records that a worker's run is still alive (it produced
// events, or its plugin answered a ping), and in the same transaction
// renews the leases of the tasks the run holds: a live run keeps its
// tasks without a write of its own.
func (db *DB) Heartbeat(ctx context.Context, runID string) error {
	return db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`UPDATE workers SET heartbeat_at = ? WHERE run_id = ?`,
			&execOptions{Args: []any{now, runID}})
		if err != nil {
			return err
		}
		return renewRunLeases(conn, runID, now)
	})
}

// RemoveWorker forgets a process that has exited.
func (db *DB) RemoveWorker(ctx context.Context, runID string) error {
	return db.writeGrouped(ctx, func(conn querier) error { // may run twice: a delete
		return conn.execute(`DELETE FROM workers WHERE run_id = ?`, &execOptions{Args: []any{runID}})
	})
}

// ListWorkers returns every recorded plugin process, oldest first.
func (db *DB) ListWorkers(ctx context.Context) ([]Worker, error) {
	var out []Worker
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT w.run_id, w.pid, w.pgid, w.plugin_path, w.plugin_sha256, w.started_at, w.heartbeat_at,
			coalesce(r.agent, ''), coalesce(r.workflow, ''), coalesce(r.tag, ''), coalesce(r.backend, ''), w.state, w.daemon
			FROM workers w LEFT JOIN runs r ON r.id = w.run_id
			WHERE ?1 = '' OR w.daemon = ?1 ORDER BY w.started_at, w.run_id`,
			&execOptions{Args: []any{db.clusterDaemon()}, ResultFunc: func(s row) error {
				out = append(out, Worker{RunID: s.ColumnText(0), PID: s.ColumnInt(1), PGID: s.ColumnInt(2),
					PluginPath: s.ColumnText(3), PluginSHA256: s.ColumnText(4),
					StartedAt: fromMs(s.ColumnInt64(5)), HeartbeatAt: fromMs(s.ColumnInt64(6)),
					Agent:   AgentKey{Name: s.ColumnText(7), Workflow: s.ColumnText(8), Tag: s.ColumnText(9)},
					Backend: s.ColumnText(10), State: WorkerState(s.ColumnText(11)), Daemon: s.ColumnText(12)})
				return nil
			}})
	})
	return out, err
}

// HeartbeatAge is how long ago a worker's heartbeat was, measured by the
// store's own clock (the one that wrote it), so that a watchdog never
// compares timestamps from two clocks.
func (db *DB) HeartbeatAge(ctx context.Context, runID string) (time.Duration, error) {
	var age time.Duration
	err := db.read(ctx, func(conn querier) error {
		found := false
		err := conn.execute(`SELECT heartbeat_at FROM workers WHERE run_id = ?`, &execOptions{
			Args: []any{runID}, ResultFunc: func(s row) error {
				age, found = time.Duration(db.nowMs()-s.ColumnInt64(0))*time.Millisecond, true
				return nil
			}})
		if err == nil && !found {
			err = contract.Errorf(contract.CodeNotFound, "no worker for run %s", runID)
		}
		return err
	})
	return age, err
}

// RunInboxUntil returns the inbox high-water seq recorded for a run: what
// its my_inbox may show.
func (db *DB) RunInboxUntil(ctx context.Context, id string) (int64, error) {
	var until int64
	err := db.read(ctx, func(conn querier) error {
		found := false
		err := conn.execute(`SELECT inbox_until_seq FROM runs WHERE id = ?`, &execOptions{
			Args: []any{id}, ResultFunc: func(s row) error { until, found = s.ColumnInt64(0), true; return nil }})
		if err == nil && !found {
			err = contract.Errorf(contract.CodeNotFound, "run %s not found", id)
		}
		return err
	})
	return until, err
}

// Usage is what a run consumed, as runs.usage_json keeps it (the keys are
// the field names, as they always were).
type Usage struct {
	InputTokens, OutputTokens int64
	CostUSD                   float64
	// CostSource says where CostUSD comes from: CostFromPlugin,
	// CostFromPrices, or "" when the cost is unknown (a model without a
	// price, and a backend that did not report one).
	CostSource string `json:",omitempty"`
	// Model is the agent's model when the run ran, which priced it.
	Model string `json:",omitempty"`
}

// Where a run's cost comes from.
const (
	CostFromPlugin = "plugin" // the backend reported it
	CostFromPrices = "prices" // the daemon's price table
)

// CostKnown reports whether CostUSD is a real figure; a run that used no
// tokens costs nothing whatever its model.
func (u Usage) CostKnown() bool {
	return u.CostSource != "" || (u.InputTokens == 0 && u.OutputTokens == 0)
}

// ParseUsage reads a run's usage_json; anything unreadable is no usage.
func ParseUsage(raw json.RawMessage) Usage {
	var u Usage
	_ = json.Unmarshal(raw, &u)
	return u
}

// RunStats sums runs: for the summary `agent-worker run` prints and the
// spend `info` and `status` show.
type RunStats struct {
	Runs, Failed              int
	InputTokens, OutputTokens int64
	CostUSD                   float64
	// Unpriced counts the runs that used tokens but whose cost is unknown,
	// so a total never passes for more than it is.
	Unpriced int
}

// Add sums o into s.
func (s *RunStats) Add(o RunStats) {
	s.Runs += o.Runs
	s.Failed += o.Failed
	s.InputTokens += o.InputTokens
	s.OutputTokens += o.OutputTokens
	s.CostUSD += o.CostUSD
	s.Unpriced += o.Unpriced
}

// statsColumns are the sums of RunStats over a set of runs, in its order,
// in q's dialect (the two engines read JSON with different functions).
func statsColumns(q querier) string {
	return pick(q, statsColumnsSQLite, statsColumnsPostgres)
}

const (
	statsColumnsSQLite = `count(*), count(*) FILTER (WHERE state = 'failed'),
	coalesce(sum(json_extract(usage_json, '$.InputTokens')), 0), coalesce(sum(json_extract(usage_json, '$.OutputTokens')), 0),
	coalesce(sum(json_extract(usage_json, '$.CostUSD')), 0.0),
	count(*) FILTER (WHERE coalesce(json_extract(usage_json, '$.CostSource'), '') = ''
		AND coalesce(json_extract(usage_json, '$.InputTokens'), 0) + coalesce(json_extract(usage_json, '$.OutputTokens'), 0) > 0)`
	statsColumnsPostgres = `count(*), count(*) FILTER (WHERE state = 'failed'),
	coalesce(sum((usage_json::jsonb ->> 'InputTokens')::bigint), 0), coalesce(sum((usage_json::jsonb ->> 'OutputTokens')::bigint), 0),
	coalesce(sum((usage_json::jsonb ->> 'CostUSD')::double precision), 0.0),
	count(*) FILTER (WHERE coalesce(usage_json::jsonb ->> 'CostSource', '') = ''
		AND coalesce((usage_json::jsonb ->> 'InputTokens')::bigint, 0) + coalesce((usage_json::jsonb ->> 'OutputTokens')::bigint, 0) > 0)`
)

func scanStats(stmt row, col int) RunStats {
	return RunStats{Runs: stmt.ColumnInt(col), Failed: stmt.ColumnInt(col + 1), InputTokens: stmt.ColumnInt64(col + 2),
		OutputTokens: stmt.ColumnInt64(col + 3), CostUSD: stmt.ColumnFloat(col + 4), Unpriced: stmt.ColumnInt(col + 5)}
}

// Stats returns the run statistics of scope since t.
func (db *DB) Stats(ctx context.Context, s Scope, since time.Time) (RunStats, error) {
	var st RunStats
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+statsColumns(conn)+` FROM runs WHERE workflow = ? AND tag = ? AND started_at >= ?`,
			&execOptions{Args: []any{s.Workflow, s.Tag, since.UnixMilli()}, ResultFunc: func(stmt row) error {
				st = scanStats(stmt, 0)
				return nil
			}})
	})
	return st, err
}

// Spend returns the statistics of every run ever recorded, per agent
// (agents removed since included), so a caller can total them per agent
// and per workflow:tag from one read.
func (db *DB) Spend(ctx context.Context) (map[AgentKey]RunStats, error) {
	out := map[AgentKey]RunStats{}
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT workflow, tag, agent, `+statsColumns(conn)+` FROM runs GROUP BY workflow, tag, agent`,
			&execOptions{ResultFunc: func(stmt row) error {
				k := AgentKey{Workflow: stmt.ColumnText(0), Tag: stmt.ColumnText(1), Name: stmt.ColumnText(2)}
				out[k] = scanStats(stmt, 3)
				return nil
			}})
	})
	return out, err
}

// ReplaceSession saves a backend's new session for an agent only while
// the stored one is still old ("" for none) and reports whether it did, so
// a run that began before a reset cannot bring the forgotten conversation
// back.
func (db *DB) ReplaceSession(ctx context.Context, k AgentKey, backend, old, sessionID string) (bool, error) {
	saved := false
	err := db.write(ctx, func(conn querier) error {
		cur := ""
		err := conn.execute(`SELECT session_id FROM sessions WHERE workflow = ? AND tag = ? AND agent = ? AND backend = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, backend},
				ResultFunc: func(s row) error { cur = s.ColumnText(0); return nil }})
		if err != nil || cur != old {
			return err
		}
		saved = true
		return conn.execute(`INSERT INTO sessions (workflow, tag, agent, backend, session_id, updated_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workflow, tag, agent, backend)
			DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, backend, sessionID, db.nowMs()}})
	})
	return saved && err == nil, err
}

// ResetSessions forgets what the agent's backends keep of its conversation
// (the sdk backend's memory, the CLIs' session ids), for every backend it
// has used, and returns how many were kept; a missing agent is not found.
func (db *DB) ResetSessions(ctx context.Context, k AgentKey) (int, error) {
	n := 0
	err := db.write(ctx, func(conn querier) error {
		if _, err := getAgent(conn, k); err != nil {
			return err
		}
		err := conn.execute(`DELETE FROM sessions WHERE workflow = ? AND tag = ? AND agent = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}})
		n = conn.changes()
		return err
	})
	return n, err
}

// Session returns the agent's last conversation id with backend, or "".
func (db *DB) Session(ctx context.Context, k AgentKey, backend string) (string, error) {
	var id string
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT session_id FROM sessions WHERE workflow = ? AND tag = ? AND agent = ? AND backend = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, backend},
				ResultFunc: func(s row) error { id = s.ColumnText(0); return nil }})
	})
	return id, err
}
