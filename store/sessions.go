package store

import (
	"context"
	"slices"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Session is an outside Claude Code session acting as an agent through its
// hooks (`agent-worker hooks install`). An agent has at most one: the
// newest session to call a hook takes it over.
type Session struct {
	Agent AgentKey
	// ID is Claude Code's session id.
	ID string
	// Cwd is the project directory the session runs in.
	Cwd         string
	AttachedAt  time.Time
	HeartbeatAt time.Time
}

// HeartbeatSession records that session id of k called a hook now: it
// attaches the session if it is new (or another took the agent over
// meanwhile) and otherwise moves only its heartbeat, so a session whose
// SessionStart the daemon missed is attached by its next hook.
func (db *DB) HeartbeatSession(ctx context.Context, k AgentKey, id, cwd string) (Session, error) {
	if id == "" {
		return Session{}, contract.Errorf(contract.CodeInvalid, "a session needs its session_id")
	}
	var s Session
	err := db.write(ctx, func(conn querier) error {
		if _, err := getAgent(conn, k); err != nil {
			return err
		}
		now := db.nowMs()
		err := conn.execute(`INSERT INTO agent_sessions (workflow, tag, agent, session_id, cwd, attached_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (workflow, tag, agent) DO UPDATE SET
				attached_at = CASE WHEN agent_sessions.session_id = excluded.session_id
				                   THEN agent_sessions.attached_at ELSE excluded.attached_at END,
				session_id = excluded.session_id, cwd = excluded.cwd, heartbeat_at = excluded.heartbeat_at`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, id, cwd, now, now}})
		if err != nil {
			return err
		}
		found := false
		err = conn.execute(`SELECT `+sessionColumns+` FROM agent_sessions WHERE workflow = ? AND tag = ? AND agent = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(r row) error {
				s, found = scanSession(r), true
				return nil
			}})
		if err == nil && !found {
			err = contract.Errorf(contract.CodeInternal, "session of %s vanished while it was written", k)
		}
		return err
	})
	return s, err
}

// DetachSession ends session id of k and reports whether it was the one
// attached: a session that another has since taken over detaches nothing.
func (db *DB) DetachSession(ctx context.Context, k AgentKey, id string) (bool, error) {
	n := 0
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`DELETE FROM agent_sessions WHERE workflow = ? AND tag = ? AND agent = ? AND session_id = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, id}})
		n = conn.changes()
		return err
	})
	return n > 0, err
}

// Sessions returns every attached session by agent, for the views that
// show an agent as attached.
func (db *DB) Sessions(ctx context.Context) (map[AgentKey]Session, error) {
	out := map[AgentKey]Session{}
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+sessionColumns+` FROM agent_sessions`, &execOptions{ResultFunc: func(r row) error {
			s := scanSession(r)
			out[s.Agent] = s
			return nil
		}})
	})
	return out, err
}

const sessionColumns = `workflow, tag, agent, session_id, cwd, attached_at, heartbeat_at`

func scanSession(r row) Session {
	return Session{Agent: AgentKey{Workflow: r.ColumnText(0), Tag: r.ColumnText(1), Name: r.ColumnText(2)},
		ID: r.ColumnText(3), Cwd: r.ColumnText(4), AttachedAt: fromMs(r.ColumnInt64(5)), HeartbeatAt: fromMs(r.ColumnInt64(6))}
}

// inboxNewestSQL is inboxSQL newest first, so a bounded delivery keeps the
// latest messages and only counts the older ones.
const inboxNewestSQL = `SELECT ` + messageColumns + `
	FROM message_recipients AS r JOIN messages AS m ON m.seq = r.seq
	WHERE r.workflow = ?1 AND r.tag = ?2 AND r.agent = ?3 AND r.seq > ?4
	ORDER BY r.seq DESC LIMIT ?5 + 0`

// DeliverInbox hands an attached session the agent's unread messages and
// marks them read, in one transaction: the newest limit of them, oldest
// first, and how many older ones were left out (read too: the session is
// told their number, and the channel still holds them). A session reads by
// being shown, so nothing is delivered twice.
func (db *DB) DeliverInbox(ctx context.Context, k AgentKey, limit int) (ms []Message, omitted int, err error) {
	if limit <= 0 || limit > maxReadLimit {
		return nil, 0, contract.Errorf(contract.CodeInvalid, "limit %d is out of range: use 1 to %d", limit, maxReadLimit)
	}
	err = db.write(ctx, func(conn querier) error {
		ms, omitted = nil, 0
		cursor, newest, err := inboxState(conn, k)
		if err != nil || newest <= cursor {
			return err
		}
		err = conn.execute(`SELECT count(*) FROM message_recipients WHERE workflow = ? AND tag = ? AND agent = ? AND seq > ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, cursor}, ResultFunc: func(r row) error {
				omitted = r.ColumnInt(0)
				return nil
			}})
		if err != nil {
			return err
		}
		err = conn.execute(inboxNewestSQL, &execOptions{Args: []any{k.Workflow, k.Tag, k.Name, cursor, limit},
			ResultFunc: func(r row) error {
				m, err := scanMessage(r)
				ms = append(ms, m)
				return err
			}})
		if err != nil || len(ms) == 0 {
			return err
		}
		slices.Reverse(ms)
		omitted -= len(ms)
		_, err = ackInbox(conn, k, ms[len(ms)-1].Seq, db.nowMs())
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return ms, omitted, nil
}
