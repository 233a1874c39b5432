package store

import (
	"context"
	"encoding/json"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/jackc/pgx/v5"
)

// Settlement is what a successful run changes when it ends. SettleRun
// writes all of it in one transaction: a daemon that dies before the commit
// leaves the run to be redone with its inbox unread and nothing posted, one
// that dies after leaves it settled, and there is no state in between.
type Settlement struct {
	RunID string
	Usage json.RawMessage
	// Reply is the run's result as a message from the agent, already
	// checked and resolved by the caller (mentions, long content as a
	// resource); nil when the run has nothing to post.
	Reply *NewMessage
	// SinceSeq is the channel's newest seq when the run started: Reply is
	// posted only if the agent wrote nothing in the channel after it, since
	// an agent that answered through its tools has spoken already.
	SinceSeq int64
	// Events are the run's last transcript events, not written yet: they
	// are written with its end, so that the transcript is whole when the
	// run is seen ended.
	Events []RunEvent
	// Idle moves the agent from running to idle with the run's end (as
	// MoveAgentState does, a pause or stop that came during the run
	// staying), so that a run ends in one write.
	Idle bool
	// InTx, on PostgreSQL, runs inside the settle's transaction, which
	// commits only if it succeeds: a cluster member completes the run's
	// queue job there, so the job ends exactly when the run is settled.
	// Ignored on SQLite.
	InTx TxHook
}

// TxHook is work of another part that must commit or roll back with a
// store write on PostgreSQL.
type TxHook func(ctx context.Context, tx pgx.Tx) error

// Settled is what SettleRun did.
type Settled struct {
	// Reply is the stored message when Posted.
	Reply Message
	// Posted says whether the Settlement's Reply was written.
	Posted bool
	// Idle says whether the agent moved from running to idle.
	Idle bool
}

// SettleRun ends a running run as succeeded: it acks the agent's inbox
// through the run's inbox_until_seq, posts Reply unless the agent already
// spoke, writes the transcript's last events, records the run's end and
// usage and, when asked, moves the agent to idle, in one transaction (its
// workers row goes once its process is gone: RemoveWorker). A run that is
// not running any more is refused with contract.CodeConflict, so a run is never
// settled twice.
func (db *DB) SettleRun(ctx context.Context, st Settlement) (Settled, error) {
	defer db.forgetRunTokens(st.RunID) // the run's tokens die with it (finishRun)
	var done Settled
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		r, err := getRunRow(conn, st.RunID)
		if err != nil {
			return err
		}
		if r.State != contract.RunRunning {
			return contract.Errorf(contract.CodeConflict, "run %s is %s already: it cannot be settled again", r.ID, r.State)
		}
		if _, err := ackInbox(conn, r.Agent, r.InboxUntilSeq, now); err != nil {
			return err
		}
		if st.Reply != nil {
			m := *st.Reply
			if m.Sender != r.Agent.Name || m.Workflow != r.Agent.Workflow || m.Tag != r.Agent.Tag {
				return contract.Errorf(contract.CodeInvalid, "the reply of run %s must come from %s in @%s:%s", r.ID, r.Agent.Name, r.Agent.Workflow, r.Agent.Tag)
			}
			spoke, err := spokeSince(conn, r.Agent, st.SinceSeq)
			if err != nil {
				return err
			}
			if !spoke {
				if done.Reply, err = appendMessage(conn, m, now); err != nil {
					return err
				}
				done.Posted = true
			}
		}
		if err := appendRunEvents(conn, r.ID, st.Events); err != nil {
			return err
		}
		if err := finishRun(conn, r.ID, contract.RunSucceeded, "", st.Usage, now); err != nil {
			return err
		}
		if st.Idle {
			if done.Idle, err = db.moveAgentState(conn, r.Agent, []contract.AgentState{contract.AgentRunning}, contract.AgentIdle, ""); err != nil {
				return err
			}
		}
		if pc, ok := conn.(*pgConn); ok && st.InTx != nil {
			if tx, ok := pc.q.(pgx.Tx); ok {
				return st.InTx(pc.ctx, tx)
			}
		}
		return nil
	})
	if err != nil {
		return Settled{}, err
	}
	return done, nil
}

// getRunRow reads one run without its transcript.
func getRunRow(conn querier, id string) (Run, error) {
	var r Run
	found := false
	err := conn.execute(`SELECT `+runColumns+` FROM runs WHERE id = ?`, &execOptions{
		Args: []any{id}, ResultFunc: func(s row) (err error) { r, err = scanRun(s); found = true; return err }})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "run %s not found: `agent-worker runs` lists the runs", id)
	}
	return r, err
}

// SpokeSince reports whether the agent wrote in its channel after seq: an
// agent that answered through its tools during a run has spoken, and its
// run's result is not posted again.
func (db *DB) SpokeSince(ctx context.Context, k AgentKey, seq int64) (bool, error) {
	var spoke bool
	err := db.read(ctx, func(conn querier) (err error) {
		spoke, err = spokeSince(conn, k, seq)
		return err
	})
	return spoke, err
}

func spokeSince(conn querier, k AgentKey, seq int64) (bool, error) {
	n, err := count(conn, `SELECT EXISTS (SELECT 1 FROM messages WHERE workflow = ? AND tag = ? AND sender = ? AND seq > ?)`,
		k.Workflow, k.Tag, k.Name, seq)
	return n > 0, err
}
