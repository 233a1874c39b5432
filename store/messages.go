package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Message kinds. System lines come from the daemon (proposal results,
// kickoffs, scheduled wake-ups); tool lines record a backend's tool calls.
const (
	KindMessage = "message"
	KindSystem  = "system"
	KindTool    = "tool"
)

// Scope is one workflow:tag instance: the unit that shares a channel,
// documents, proposals and resources, and shares nothing with other scopes.
type Scope struct {
	Workflow, Tag string
}

// String formats the scope as users write it, "@workflow:tag".
func (s Scope) String() string { return "@" + s.Workflow + ":" + s.Tag }

// Scope returns the workflow:tag the agent belongs to.
func (k AgentKey) Scope() Scope { return Scope{Workflow: k.Workflow, Tag: k.Tag} }

// Message is one line of a channel. Seq is its place in the total order
// that inbox cursors count in.
type Message struct {
	Seq           int64
	ID            string
	Workflow, Tag string
	Sender        string
	Content       string
	Kind          string
	// To is the recipient of a direct message; only To and Sender see it.
	To string
	// Recipients are the agents whose inbox got the message (mentions,
	// expanded @all and To), in first-seen order.
	Recipients []string
	// ResourceID names the resource holding the full text of a long message.
	ResourceID string
	CreatedAt  time.Time
	// Traceparent is the W3C trace context of the span that sent it ("" for
	// none): the run it wakes joins that trace.
	Traceparent string
	// LoopGuardTripped is set (never stored) on the message that made its
	// workflow's loop guard pause the workflow: the caller says so in the
	// channel.
	LoopGuardTripped bool
}

// NewMessage is a message to append. The caller has already resolved its
// mentions into Recipients; the store only records them.
type NewMessage struct {
	Workflow, Tag string
	Sender        string
	Content       string
	// Kind defaults to KindMessage.
	Kind       string
	To         string
	Recipients []string
	// Resource, when set, is stored in the same transaction and the message
	// points at it.
	Resource *NewResource
	// KeepStreak leaves the loop guard's count alone: a daemon line that
	// reports what an agent did (a task board line, a spawn, a merge by a
	// planner) must neither lengthen nor end the agents' run of messages
	// in a row, or agents could escape the guard through the daemon.
	KeepStreak bool
	// Traceparent is the sender's span (Message.Traceparent).
	Traceparent string
}

// AppendMessage writes a message, its inbox rows and its resource (if any)
// in one transaction, so a reader never sees a message without its
// recipients or a reference to a missing resource.
func (db *DB) AppendMessage(ctx context.Context, m NewMessage) (Message, error) {
	var out Message
	err := db.writeGrouped(ctx, func(conn querier) (err error) {
		out, err = appendMessage(conn, m, db.nowMs())
		return err
	})
	return out, err
}

// AppendMessages writes many messages in one transaction, in order: for
// imports and for seeding large channels, where one transaction per message
// would dominate the cost.
func (db *DB) AppendMessages(ctx context.Context, ms []NewMessage) ([]Message, error) {
	out := make([]Message, 0, len(ms))
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		for _, m := range ms {
			msg, err := appendMessage(conn, m, now)
			if err != nil {
				return err
			}
			out = append(out, msg)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendMessage is AppendMessage inside a caller's transaction; proposal
// and other writes that post channel lines use it to stay atomic.
func appendMessage(conn querier, m NewMessage, now int64) (Message, error) {
	if m.Workflow == "" || m.Tag == "" || m.Sender == "" {
		return Message{}, contract.Errorf(contract.CodeInvalid, "message needs a workflow, tag and sender")
	}
	if m.Kind == "" {
		m.Kind = KindMessage
	}
	out := Message{
		ID: newID("msg_"), Workflow: m.Workflow, Tag: m.Tag, Sender: m.Sender,
		Content: m.Content, Kind: m.Kind, To: m.To, CreatedAt: fromMs(now),
		Recipients: dedupe(m.Recipients), Traceparent: m.Traceparent,
	}
	if m.Resource != nil {
		r := *m.Resource
		r.Workflow, r.Tag = m.Workflow, m.Tag
		if r.CreatedBy == "" {
			r.CreatedBy = m.Sender
		}
		res, err := insertResource(conn, r, now)
		if err != nil {
			return Message{}, err
		}
		out.ResourceID = res.ID
	}
	recipients, err := json.Marshal(out.Recipients)
	if err != nil {
		return Message{}, err
	}
	args := []any{out.ID, out.Workflow, out.Tag, out.Sender, out.Content,
		out.Kind, out.To, string(recipients), out.ResourceID, now, out.Traceparent}
	if pc, ok := conn.(*pgConn); ok {
		return appendMessagePostgres(pc, out, args, !m.KeepStreak, now)
	}
	if sc, ok := conn.(sqliteConn); ok {
		// SQLite: the rowid of the insert, without RETURNING, which costs
		// SQLite a statement journal per message.
		err = conn.execute(insertMessageSQL, &execOptions{Args: args})
		out.Seq = sc.c.LastInsertRowID()
	} else {
		err = conn.execute(insertMessageReturningSQL, &execOptions{Args: args,
			ResultFunc: func(s row) error { out.Seq = s.ColumnInt64(0); return nil }})
	}
	if err != nil {
		return Message{}, err
	}
	if !m.KeepStreak {
		if out.LoopGuardTripped, err = countAgentStreak(conn, out, now); err != nil {
			return Message{}, err
		}
	}
	for _, agent := range out.Recipients {
		if agent == out.Sender {
			continue // nobody is woken by their own message
		}
		// Only members get inbox rows; a name that left the team since the
		// caller resolved mentions is dropped rather than failing the send.
		// A lookup then a one-row INSERT … VALUES: an INSERT … SELECT would
		// open a statement journal for every recipient.
		member, err := count(conn, `SELECT count(*) FROM agents WHERE workflow = ? AND tag = ? AND name = ?`, out.Workflow, out.Tag, agent)
		if err != nil {
			return Message{}, err
		}
		if member == 0 {
			continue
		}
		err = conn.execute(`INSERT INTO message_recipients (workflow, tag, agent, seq) VALUES (?, ?, ?, ?)`,
			&execOptions{Args: []any{out.Workflow, out.Tag, agent, out.Seq}})
		if err != nil {
			return Message{}, err
		}
	}
	return out, nil
}

// NewResource is content to store as a resource.
type NewResource struct {
	// ID is normally empty (the store picks one); a caller that must quote
	// the id in the same transaction, like a long message, takes one from
	// NewResourceID first.
	ID            string
	Workflow, Tag string
	// Type is markdown, json, text or diff; empty means text.
	Type      string
	Content   string
	CreatedBy string
}

// Resource is stored content addressed by an id (res_…), for text too large
// to pass around in messages.
type Resource struct {
	ID, Workflow, Tag string
	Type, Content     string
	CreatedBy         string
	CreatedAt         time.Time
}

// ResourceTypes are the types a resource may have.
var ResourceTypes = []string{"markdown", "json", "text", "diff"}

func insertResource(conn querier, r NewResource, now int64) (Resource, error) {
	if r.Type == "" {
		r.Type = "text"
	}
	if !contains(ResourceTypes, r.Type) {
		return Resource{}, contract.Errorf(contract.CodeInvalid, "unknown resource type %q: use markdown, json, text or diff", r.Type)
	}
	if r.Type == "json" && !json.Valid([]byte(r.Content)) {
		return Resource{}, contract.Errorf(contract.CodeInvalid, "resource of type json does not hold valid JSON")
	}
	if r.ID == "" {
		r.ID = NewResourceID()
	}
	out := Resource{ID: r.ID, Workflow: r.Workflow, Tag: r.Tag, Type: r.Type,
		Content: r.Content, CreatedBy: r.CreatedBy, CreatedAt: fromMs(now)}
	err := conn.execute(`INSERT INTO resources (id, workflow, tag, type, content, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, &execOptions{Args: []any{
		out.ID, out.Workflow, out.Tag, out.Type, out.Content, out.CreatedBy, now}})
	return out, err
}

// NewResourceID returns a fresh resource id, res_ + 16 hex digits.
func NewResourceID() string { return newID("res_") }

// newID returns prefix + 16 random hex digits: unguessable, so an id from
// one workflow:tag cannot be probed from another.
func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// dedupe keeps the first occurrence of each name, in order.
func dedupe(names []string) []string {
	out := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// countAgentStreak keeps the workflow's run of agent messages in a row: an
// agent's message lengthens it, a human's or a system line ends it. When
// the run reaches the workflow's loop guard the workflow is paused, in the
// same transaction, and countAgentStreak reports true.
func countAgentStreak(conn querier, m Message, now int64) (tripped bool, err error) {
	var streak, guard int
	var state string
	// An UPDATE then a SELECT rather than UPDATE … RETURNING: SQLite runs
	// RETURNING as a trigger, which gives the statement its own journal
	// (allocated and freed on every message, a third of a send's cost).
	err = conn.execute(`UPDATE workflows SET agent_streak = CASE WHEN ?3 AND EXISTS
			(SELECT 1 FROM agents WHERE workflow = ?1 AND tag = ?2 AND name = ?4) THEN agent_streak + 1 ELSE 0 END
		WHERE name = ?1 AND tag = ?2`,
		&execOptions{Args: []any{m.Workflow, m.Tag, m.Kind == KindMessage, m.Sender}})
	if err != nil || conn.changes() == 0 {
		return false, err
	}
	err = conn.execute(`SELECT agent_streak, loop_guard, state FROM workflows WHERE name = ? AND tag = ?`,
		&execOptions{Args: []any{m.Workflow, m.Tag}, ResultFunc: func(s row) error {
			streak, guard, state = s.ColumnInt(0), s.ColumnInt(1), s.ColumnText(2)
			return nil
		}})
	if err != nil {
		return false, err
	}
	return loopGuard(conn, m, streak, guard, state, now)
}

// loopGuard pauses m's workflow, and reports true, when its agent streak
// has reached its loop guard while it runs.
func loopGuard(conn querier, m Message, streak, guard int, state string, now int64) (bool, error) {
	if guard == 0 || streak < guard || contract.WorkflowState(state) != contract.WorkflowRunning {
		return false, nil
	}
	err := conn.execute(`UPDATE workflows SET state = ?, error = ?, updated_at = ? WHERE name = ? AND tag = ?`,
		&execOptions{Args: []any{contract.WorkflowPaused, fmt.Sprintf("paused by the loop guard: %d agent messages in a row", streak), now, m.Workflow, m.Tag}})
	return err == nil, err
}

const insertMessageSQL = `INSERT INTO messages
	(id, workflow, tag, sender, content, kind, to_agent, recipients, resource_id, created_at, traceparent)
	VALUES (?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, NULLIF(?, ''), ?, NULLIF(?, ''))`

const insertMessageReturningSQL = insertMessageSQL + ` RETURNING seq`
