package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Page sizes of channel reads: the default fits a prompt, the maximum keeps
// one call from pulling a whole history into memory.
const (
	defaultReadLimit = 50
	maxReadLimit     = 1000
)

// ReadOptions selects a page of a channel. The zero value is the newest page
// as a human operator sees it.
type ReadOptions struct {
	// SinceSeq, when set, pages forward: only messages with seq > SinceSeq,
	// oldest first, so a reader can follow the channel without gaps.
	SinceSeq int64
	// Limit is the page size: 0 means 50, above 1000 is invalid. Without
	// SinceSeq the page is the newest Limit messages.
	Limit int
	// Viewer is the agent reading: direct messages are shown only to their
	// sender and recipient. "" is a human operator, who sees everything.
	Viewer string
}

// messageColumns are read from messages aliased m, so that channel and inbox
// reads share scanMessage.
const messageColumns = `m.seq, m.id, m.workflow, m.tag, m.sender, m.content, m.kind,
	coalesce(m.to_agent, ''), m.recipients, coalesce(m.resource_id, ''), m.created_at, coalesce(m.traceparent, '')`

func scanMessage(s row) (Message, error) {
	m := Message{
		Seq: s.ColumnInt64(0), ID: s.ColumnText(1), Workflow: s.ColumnText(2), Tag: s.ColumnText(3),
		Sender: s.ColumnText(4), Content: s.ColumnText(5), Kind: s.ColumnText(6), To: s.ColumnText(7),
		ResourceID: s.ColumnText(9), CreatedAt: fromMs(s.ColumnInt64(10)), Traceparent: s.ColumnText(11),
	}
	if err := json.Unmarshal([]byte(s.ColumnText(8)), &m.Recipients); err != nil {
		return Message{}, fmt.Errorf("message %s: recipients: %w", m.ID, err)
	}
	return m, nil
}

// These reads walk the messages_by_workflow index in the order they return
// rows, so LIMIT stops the walk early instead of sorting the channel.
const (
	channelVisible = `m.workflow = ?1 AND m.tag = ?2
		AND (?3 = '' OR m.to_agent IS NULL OR m.to_agent = ?3 OR m.sender = ?3)`
	readNewestSQL = `SELECT ` + messageColumns + ` FROM messages AS m
		WHERE ` + channelVisible + ` ORDER BY m.seq DESC LIMIT ?4 + 0`
	readSinceSQL = `SELECT ` + messageColumns + ` FROM messages AS m
		WHERE ` + channelVisible + ` AND m.seq > ?5 ORDER BY m.seq LIMIT ?4 + 0`
	latestSeqSQL = `SELECT coalesce((SELECT seq FROM messages
		WHERE workflow = ? AND tag = ? ORDER BY seq DESC LIMIT 1), 0)`
)

// ReadChannel returns one page of a workflow:tag's channel, oldest first,
// as o.Viewer may see it. It is what channel_read and peek show.
func (db *DB) ReadChannel(ctx context.Context, s Scope, o ReadOptions) ([]Message, error) {
	limit, err := pageLimit(o.Limit, defaultReadLimit)
	if err != nil {
		return nil, err
	}
	if o.SinceSeq < 0 {
		return nil, contract.Errorf(contract.CodeInvalid, "since_seq %d is negative", o.SinceSeq)
	}
	query, args := readNewestSQL, []any{s.Workflow, s.Tag, o.Viewer, limit}
	if o.SinceSeq > 0 {
		query, args = readSinceSQL, append(args, o.SinceSeq)
	}
	var ms []Message
	err = db.read(ctx, func(conn querier) error {
		return conn.execute(query, &execOptions{Args: args, ResultFunc: func(st row) error {
			m, err := scanMessage(st)
			ms = append(ms, m)
			return err
		}})
	})
	if err != nil {
		return nil, err
	}
	if o.SinceSeq == 0 {
		slices.Reverse(ms)
	}
	return ms, nil
}

// LatestSeq returns the seq of the newest message of a workflow:tag (0 when
// it has none), so that a reader can start following the channel from now.
func (db *DB) LatestSeq(ctx context.Context, s Scope) (int64, error) {
	var seq int64
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(latestSeqSQL, &execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			seq = st.ColumnInt64(0)
			return nil
		}})
	})
	return seq, err
}

// pageLimit applies a read's default and rejects sizes outside 0..1000.
func pageLimit(limit, def int) (int, error) {
	switch {
	case limit < 0 || limit > maxReadLimit:
		return 0, contract.Errorf(contract.CodeInvalid, "limit %d is out of range: use 1 to %d (0 means %d)", limit, maxReadLimit, def)
	case limit == 0:
		return def, nil
	}
	return limit, nil
}

// RecentSenders names the distinct senders of a scope's last n messages,
// in the order they last spoke (newest first).
func (db *DB) RecentSenders(ctx context.Context, scope Scope, n int) ([]string, error) {
	var out []string
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT sender FROM (SELECT sender, seq FROM messages WHERE workflow = ? AND tag = ?
			ORDER BY seq DESC LIMIT ? + 0) AS recent GROUP BY sender ORDER BY max(seq) DESC`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag, n}, ResultFunc: func(s row) error {
				out = append(out, s.ColumnText(0))
				return nil
			}})
	})
	return out, err
}

// LastMessageFrom is the newest message sender wrote to the channel of s
// after seq (a direct message too; not its tool lines), found false when
// it wrote none: what a trigger's report posts.
func (db *DB) LastMessageFrom(ctx context.Context, s Scope, sender string, afterSeq int64) (Message, bool, error) {
	var m Message
	found := false
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+messageColumns+` FROM messages AS m WHERE m.workflow = ? AND m.tag = ? AND m.seq > ? AND m.sender = ? AND m.kind = ?
			ORDER BY m.seq DESC LIMIT 1`,
			&execOptions{Args: []any{s.Workflow, s.Tag, afterSeq, sender, KindMessage}, ResultFunc: func(st row) error {
				var err error
				m, err = scanMessage(st)
				found = err == nil
				return err
			}})
	})
	return m, found, err
}
