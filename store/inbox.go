package store

import (
	"context"
	"strings"

	"github.com/agent-worker/agent-worker/host/contract"
)

// defaultInboxLimit is how many unread messages one Inbox call returns when
// the caller does not say: more than a run can usefully read at once.
const defaultInboxLimit = 100

// inboxSQL lists an agent's unread messages (invariant 2): a range scan of
// the message_recipients primary key past the cursor, each row joined to its
// message by seq. CROSS JOIN pins that loop order so the planner can never
// turn it into a scan of the channel.
const inboxSQL = `SELECT ` + messageColumns + `
	FROM message_recipients AS r CROSS JOIN messages AS m ON m.seq = r.seq
	WHERE r.workflow = ?1 AND r.tag = ?2 AND r.agent = ?3
	  AND r.seq > coalesce((SELECT cursor FROM inbox_ack WHERE workflow = ?1 AND tag = ?2 AND agent = ?3), 0)
	ORDER BY r.seq LIMIT ?4 + 0`

// inboxSQLPostgres is inboxSQL for PostgreSQL, which has no CROSS JOIN …
// ON; SQLite's CROSS JOIN is there to fix the join order.
var inboxSQLPostgres = strings.Replace(inboxSQL, "CROSS JOIN", "JOIN", 1)

// inboxStateSQL reads, in one statement, whether the agent exists, its
// cursor and the newest seq it was ever addressed.
const inboxStateSQL = `SELECT
	EXISTS (SELECT 1 FROM agents WHERE workflow = ?1 AND tag = ?2 AND name = ?3),
	coalesce((SELECT cursor FROM inbox_ack WHERE workflow = ?1 AND tag = ?2 AND agent = ?3), 0),
	coalesce((SELECT seq FROM message_recipients WHERE workflow = ?1 AND tag = ?2 AND agent = ?3
	          ORDER BY seq DESC LIMIT 1), 0)`

func inboxState(conn querier, k AgentKey) (cursor, newest int64, err error) {
	exists := false
	err = conn.execute(inboxStateSQL, &execOptions{
		Args: []any{k.Workflow, k.Tag, k.Name},
		ResultFunc: func(s row) error {
			exists, cursor, newest = s.ColumnBool(0), s.ColumnInt64(1), s.ColumnInt64(2)
			return nil
		}})
	if err == nil && !exists {
		err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
	}
	return cursor, newest, err
}

// Inbox returns up to limit (0 means 100) of the agent's unread messages,
// oldest first. It does not ack: a run acks only after it has succeeded, so
// a failed run's messages are shown again (invariant 3).
func (db *DB) Inbox(ctx context.Context, k AgentKey, limit int) ([]Message, error) {
	limit, err := pageLimit(limit, defaultInboxLimit)
	if err != nil {
		return nil, err
	}
	var ms []Message
	err = db.snapshot(ctx, func(conn querier) (err error) {
		// One snapshot, so a deleted agent is reported as such rather than
		// as an empty inbox.
		if _, _, err := inboxState(conn, k); err != nil {
			return err
		}
		return conn.execute(pick(conn, inboxSQL, inboxSQLPostgres), &execOptions{
			Args: []any{k.Workflow, k.Tag, k.Name, limit},
			ResultFunc: func(s row) error {
				m, err := scanMessage(s)
				ms = append(ms, m)
				return err
			}})
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// NewestInboxSeq returns the newest seq ever addressed to the agent, read
// or not (0 for none): whether anything arrived since a given message.
func (db *DB) NewestInboxSeq(ctx context.Context, k AgentKey) (int64, error) {
	var newest int64
	err := db.read(ctx, func(conn querier) (err error) {
		_, newest, err = inboxState(conn, k)
		return err
	})
	return newest, err
}

// InboxCursor returns the seq up to which the agent has acked its inbox (0
// if it never has), so a run can record what it was shown against it.
func (db *DB) InboxCursor(ctx context.Context, k AgentKey) (int64, error) {
	var cursor int64
	err := db.read(ctx, func(conn querier) (err error) {
		cursor, _, err = inboxState(conn, k)
		return err
	})
	return cursor, err
}

// AckInbox marks the agent's inbox read through untilSeq and returns the
// cursor after the call. The cursor only moves forward, so a late or
// repeated ack is harmless; acking past the newest message the agent was
// sent is refused, because it would silently skip messages it never saw.
func (db *DB) AckInbox(ctx context.Context, k AgentKey, untilSeq int64) (int64, error) {
	if untilSeq < 0 {
		return 0, contract.Errorf(contract.CodeInvalid, "until_seq %d is negative", untilSeq)
	}
	var cursor int64
	err := db.write(ctx, func(conn querier) (err error) {
		cursor, err = ackInbox(conn, k, untilSeq, db.nowMs())
		return err
	})
	if err != nil {
		return 0, err
	}
	return cursor, nil
}

// ackInbox is AckInbox inside a caller's transaction, so settling a run
// acks with the same rules as the ack tool.
func ackInbox(conn querier, k AgentKey, untilSeq, now int64) (int64, error) {
	cur, newest, err := inboxState(conn, k)
	switch {
	case err != nil || untilSeq <= cur:
		return cur, err
	case newest == 0:
		return cur, contract.Errorf(contract.CodeInvalid, "until_seq %d: your inbox has no messages to ack", untilSeq)
	case untilSeq > newest:
		return cur, contract.Errorf(contract.CodeInvalid, "until_seq %d is beyond your newest inbox message (%d): ack only messages you have read", untilSeq, newest)
	}
	err = conn.execute(`INSERT INTO inbox_ack (workflow, tag, agent, cursor, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (workflow, tag, agent) DO UPDATE SET
			cursor = CASE WHEN excluded.cursor > inbox_ack.cursor THEN excluded.cursor ELSE inbox_ack.cursor END, updated_at = excluded.updated_at`,
		&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, untilSeq, now}})
	if err != nil {
		return cur, err
	}
	return untilSeq, nil
}
