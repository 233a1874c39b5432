package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// LiveSession is one context window of a live Claude Code session acting
// as an agent through its hooks (issue 44): one row per Claude session id,
// kept after it ends, chained to the session it continues. Session is the
// attachment (one per agent, gone at SessionEnd); a LiveSession is its
// history.
type LiveSession struct {
	// ID is Claude Code's session id; Prev the session it continues
	// ("" for none).
	ID, Prev string
	Agent    AgentKey
	// EffortID is the agent's active effort when the session started.
	EffortID string
	// RunID is the pseudo-run whose transcript holds the person's prompts
	// and the session's tool calls (`logs`, search, the console).
	RunID string
	Cwd   string
	// EndedAt is zero while the session is open.
	StartedAt, HeartbeatAt, EndedAt time.Time
	// Heartbeats counts its hooks.
	Heartbeats int64
	// ContextTokens is the context it last used (0: unknown).
	ContextTokens int64
	// Loaded are the files its Read calls loaded, in the order they came
	// (at most MaxLoadedFiles).
	Loaded []string
	// Dehydration is what its PreCompact stored for the next context
	// window; Given says a SessionStart injected it.
	Dehydration  string
	DehydratedAt time.Time
	Given        bool
}

// Limits of live sessions.
const (
	// MaxLoadedFiles bounds the files a session's row remembers.
	MaxLoadedFiles = 500
	// MaxDehydration bounds a stored dehydration payload, in bytes.
	MaxDehydration = 16 << 10
)

// SessionOpening is what a SessionStart says of a session.
type SessionOpening struct {
	ID, Cwd string
	// Chain: when the session is new, it continues the agent's newest
	// other session (a compaction, a resume, or a new session while an
	// effort is in flight).
	Chain bool
	// EffortID is the agent's active effort ("" for none).
	EffortID string
}

// OpenLiveSession records that session o.ID of k started (or started
// again: a resumed or compacted session keeps its id and its row, and one
// that had ended is open again with a new pseudo-run). created says the
// row is new.
func (db *DB) OpenLiveSession(ctx context.Context, k AgentKey, o SessionOpening) (s LiveSession, created bool, err error) {
	if o.ID == "" {
		return LiveSession{}, false, contract.Errorf(contract.CodeInvalid, "a session needs its session_id")
	}
	err = db.write(ctx, func(conn querier) error {
		if _, err := getAgent(conn, k); err != nil {
			return err
		}
		var err error
		s, created, err = db.ensureLiveSession(conn, k, o)
		return err
	})
	return s, created, err
}

// ensureLiveSession is OpenLiveSession in the caller's transaction.
func (db *DB) ensureLiveSession(conn querier, k AgentKey, o SessionOpening) (LiveSession, bool, error) {
	now := db.nowMs()
	s, found, err := getLiveSession(conn, o.ID)
	if err != nil {
		return s, false, err
	}
	if found {
		if s.Agent != k {
			return s, false, contract.Errorf(contract.CodeConflict, "session %s acts as %s, not %s", o.ID, s.Agent, k)
		}
		if s.EndedAt.IsZero() {
			return s, false, nil
		}
		run, err := db.startSessionRun(conn, k, now)
		if err != nil {
			return s, false, err
		}
		err = conn.execute(`UPDATE live_sessions SET ended_at = 0, run_id = ? WHERE session_id = ?`,
			&execOptions{Args: []any{run, o.ID}})
		s.EndedAt, s.RunID = time.Time{}, run
		return s, false, err
	}
	prev := ""
	if o.Chain {
		err = conn.execute(`SELECT session_id FROM live_sessions WHERE workflow = ? AND tag = ? AND agent = ? AND session_id <> ?
			ORDER BY started_at DESC, session_id LIMIT 1`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, o.ID}, ResultFunc: func(r row) error {
				prev = r.ColumnText(0)
				return nil
			}})
		if err != nil {
			return s, false, err
		}
	}
	run, err := db.startSessionRun(conn, k, now)
	if err != nil {
		return s, false, err
	}
	err = conn.execute(`INSERT INTO live_sessions (session_id, workflow, tag, agent, prev_session_id, effort_id, run_id, cwd, started_at, heartbeat_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		&execOptions{Args: []any{o.ID, k.Workflow, k.Tag, k.Name, prev, o.EffortID, run, o.Cwd, now, now}})
	s = LiveSession{ID: o.ID, Prev: prev, Agent: k, EffortID: o.EffortID, RunID: run, Cwd: o.Cwd,
		StartedAt: fromMs(now), HeartbeatAt: fromMs(now), Loaded: []string{}}
	return s, true, err
}

// startSessionRun records the pseudo-run that holds a session's
// transcript: backend external, running until the session ends.
func (db *DB) startSessionRun(conn querier, k AgentKey, now int64) (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := "run_" + hex.EncodeToString(b)
	return id, conn.execute(`INSERT INTO runs (id, agent, workflow, tag, backend, plugin_sha256,
		attempt, state, started_at, inbox_until_seq, daemon) VALUES (?, ?, ?, ?, 'external', '', 1, ?, ?, 0, ?)`,
		&execOptions{Args: []any{id, k.Name, k.Workflow, k.Tag, contract.RunRunning, now, db.daemon}})
}

// SessionBeat is what one hook tells of a session besides that it lives.
type SessionBeat struct {
	Cwd string
	// ContextTokens is the context the session uses now (0: unknown).
	ContextTokens int64
	// Loaded are files it has just read (absolute paths).
	Loaded []string
}

// BeatLiveSession counts a hook of session id of k: its heartbeat, the
// context it reports and the files it loaded. A session whose SessionStart
// the daemon missed gets its row here, chained to nothing.
func (db *DB) BeatLiveSession(ctx context.Context, k AgentKey, id string, b SessionBeat) (LiveSession, error) {
	loaded, err := cleanDirs(b.Loaded)
	if err != nil {
		return LiveSession{}, err
	}
	var s LiveSession
	err = db.write(ctx, func(conn querier) error {
		var err error
		if s, _, err = db.ensureLiveSession(conn, k, SessionOpening{ID: id, Cwd: b.Cwd}); err != nil {
			return err
		}
		s.Loaded = mergeNew(s.Loaded, loaded)
		if len(s.Loaded) > MaxLoadedFiles {
			s.Loaded = s.Loaded[:MaxLoadedFiles]
		}
		now := db.nowMs()
		s.Heartbeats++
		s.HeartbeatAt = fromMs(now)
		if b.ContextTokens > 0 {
			s.ContextTokens = b.ContextTokens
		}
		return conn.execute(`UPDATE live_sessions SET heartbeats = heartbeats + 1, heartbeat_at = ?, context_tokens = ?, loaded_json = ?
			WHERE session_id = ?`, &execOptions{Args: []any{now, s.ContextTokens, jsonText(s.Loaded), id}})
	})
	return s, err
}

// AppendLiveSessionEvents adds events to session id's transcript (its
// pseudo-run), numbered after the ones it holds; the events' N is
// ignored.
func (db *DB) AppendLiveSessionEvents(ctx context.Context, id string, events []RunEvent) error {
	if len(events) == 0 {
		return nil
	}
	return db.write(ctx, func(conn querier) error {
		s, found, err := getLiveSession(conn, id)
		if err != nil {
			return err
		}
		if !found {
			return contract.Errorf(contract.CodeNotFound, "no session %s", id)
		}
		n := 0
		err = conn.execute(`SELECT COALESCE(MAX(n), 0) FROM run_events WHERE run_id = ?`,
			&execOptions{Args: []any{s.RunID}, ResultFunc: func(r row) error {
				n = r.ColumnInt(0)
				return nil
			}})
		if err != nil {
			return err
		}
		evs := make([]RunEvent, len(events))
		for i, e := range events {
			e.N = n + i + 1
			evs[i] = e
		}
		return appendRunEvents(conn, s.RunID, evs)
	})
}

// DehydrateLiveSession stores payload as what session id hands the next
// context window (cut to MaxDehydration), to be injected once.
func (db *DB) DehydrateLiveSession(ctx context.Context, id, payload string) error {
	payload = cutUTF8(payload, MaxDehydration)
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE live_sessions SET dehydration = ?, dehydrated_at = ?, dehydration_given = 0 WHERE session_id = ?`,
			&execOptions{Args: []any{payload, db.nowMs(), id}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "no session %s", id)
		}
		return err
	})
}

// TakeDehydration returns the payload the start of session id injects,
// and marks it given: the session's own (a compaction or a resume keeps
// the id), else the one of the session it continues; ok is false when
// neither holds one not given yet.
func (db *DB) TakeDehydration(ctx context.Context, id string) (payload, from string, ok bool, err error) {
	err = db.write(ctx, func(conn querier) error {
		s, found, err := getLiveSession(conn, id)
		if err != nil || !found {
			return err
		}
		for _, cand := range []string{s.ID, s.Prev} {
			if cand == "" {
				continue
			}
			c, found, err := getLiveSession(conn, cand)
			if err != nil {
				return err
			}
			if found && c.Dehydration != "" && !c.Given {
				payload, from, ok = c.Dehydration, c.ID, true
				return conn.execute(`UPDATE live_sessions SET dehydration_given = 1 WHERE session_id = ?`,
					&execOptions{Args: []any{c.ID}})
			}
		}
		return nil
	})
	return payload, from, ok, err
}

// EndLiveSession records that session id ended, and its pseudo-run with
// it; reported is false when it was not open.
func (db *DB) EndLiveSession(ctx context.Context, id string) (bool, error) {
	ended := false // the pseudo-run has no tokens to forget
	err := db.write(ctx, func(conn querier) error {
		s, found, err := getLiveSession(conn, id)
		if err != nil || !found || !s.EndedAt.IsZero() {
			return err
		}
		now := db.nowMs()
		if err := conn.execute(`UPDATE live_sessions SET ended_at = ? WHERE session_id = ?`, &execOptions{Args: []any{now, id}}); err != nil {
			return err
		}
		ended = true
		return finishRun(conn, s.RunID, contract.RunSucceeded, "", nil, now)
	})
	return ended, err
}

// GetLiveSession returns session id.
func (db *DB) GetLiveSession(ctx context.Context, id string) (LiveSession, error) {
	var s LiveSession
	err := db.read(ctx, func(conn querier) error {
		var found bool
		var err error
		s, found, err = getLiveSession(conn, id)
		if err == nil && !found {
			err = contract.Errorf(contract.CodeNotFound, "no session %s", id)
		}
		return err
	})
	return s, err
}

// LiveSessions lists the sessions of k (nil: of every agent), oldest
// first: a chain reads top to bottom.
func (db *DB) LiveSessions(ctx context.Context, k *AgentKey) ([]LiveSession, error) {
	q, args := `SELECT `+liveSessionColumns+` FROM live_sessions`, []any{}
	if k != nil {
		q += ` WHERE workflow = ? AND tag = ? AND agent = ?`
		args = append(args, k.Workflow, k.Tag, k.Name)
	}
	q += ` ORDER BY started_at, session_id`
	var out []LiveSession
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(q, &execOptions{Args: args, ResultFunc: func(r row) error {
			s, err := scanLiveSession(r)
			out = append(out, s)
			return err
		}})
	})
	return out, err
}

const liveSessionColumns = `session_id, workflow, tag, agent, prev_session_id, effort_id, run_id, cwd, started_at, heartbeat_at,
	heartbeats, context_tokens, loaded_json, dehydration, dehydrated_at, dehydration_given, ended_at`

func scanLiveSession(r row) (LiveSession, error) {
	s := LiveSession{ID: r.ColumnText(0), Agent: AgentKey{Workflow: r.ColumnText(1), Tag: r.ColumnText(2), Name: r.ColumnText(3)},
		Prev: r.ColumnText(4), EffortID: r.ColumnText(5), RunID: r.ColumnText(6), Cwd: r.ColumnText(7),
		StartedAt: fromMs(r.ColumnInt64(8)), HeartbeatAt: fromMs(r.ColumnInt64(9)), Heartbeats: r.ColumnInt64(10),
		ContextTokens: r.ColumnInt64(11), Dehydration: r.ColumnText(13), Given: r.ColumnInt(15) != 0}
	if ms := r.ColumnInt64(14); ms != 0 {
		s.DehydratedAt = fromMs(ms)
	}
	if ms := r.ColumnInt64(16); ms != 0 {
		s.EndedAt = fromMs(ms)
	}
	if err := json.Unmarshal([]byte(r.ColumnText(12)), &s.Loaded); err != nil {
		return s, contract.Errorf(contract.CodeInternal, "session %s in the database: loaded files: %w", s.ID, err)
	}
	return s, nil
}

func getLiveSession(conn querier, id string) (s LiveSession, found bool, err error) {
	err = conn.execute(`SELECT `+liveSessionColumns+` FROM live_sessions WHERE session_id = ?`,
		&execOptions{Args: []any{id}, ResultFunc: func(r row) error {
			s, err = scanLiveSession(r)
			found = true
			return err
		}})
	return s, found, err
}

// RunEventUserPrompt is the transcript event of a person's prompt to a
// live session ({"text": …}): searched like a run's text.
const RunEventUserPrompt = "user_prompt"
