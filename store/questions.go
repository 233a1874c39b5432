package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Question states. A question is pending until someone answers it, or the
// agent or its workflow goes away (cancelled).
const (
	QuestionPending   = "pending"
	QuestionAnswered  = "answered"
	QuestionExpired   = "expired"
	QuestionCancelled = "cancelled"
	// An approval's answers.
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// RunEnded begins the reason recorded on a question or approval that was
// ended with the run that asked it (its run was cancelled or failed while
// it waited, or was in flight when its daemon died): nobody can act on it
// any more, and the run's retry, if any, asks again.
const RunEnded = "the run ended"

// RunEndedDaemonStopped is the reason of those a daemon that stopped
// during their run left pending.
const RunEndedDaemonStopped = RunEnded + ": the daemon stopped during it"

// Kinds of questions: one asked with ask_user, or a gated action waiting
// for approval (Question then says the action).
const (
	KindQuestion = "question"
	KindApproval = "approval"
)

// Limits on a question, exported so that the tool's description can state
// them.
const (
	MaxQuestionLen     = 4000
	MaxQuestionOptions = 20
)

// Question is what an agent asked the owner (ask_user), and the answer
// once there is one.
type Question struct {
	// ID is "q_" and 16 hex digits.
	ID       string
	Agent    AgentKey
	Kind     string // "question"
	Question string
	Options  []string
	Context  string
	// RunID is the run that asked, "" for an outside agent.
	RunID      string
	State      string
	Answer     string
	AnsweredBy string
	AnsweredAt time.Time
	CreatedAt  time.Time
}

const questionColumns = `id, workflow, tag, agent, kind, question, options_json, context, run_id, state,
	answer, answered_by, answered_at, created_at`

func scanQuestion(s row) (Question, error) {
	q := Question{ID: s.ColumnText(0), Agent: AgentKey{Workflow: s.ColumnText(1), Tag: s.ColumnText(2), Name: s.ColumnText(3)},
		Kind: s.ColumnText(4), Question: s.ColumnText(5), Context: s.ColumnText(7), RunID: s.ColumnText(8), State: s.ColumnText(9),
		Answer: s.ColumnText(10), AnsweredBy: s.ColumnText(11), CreatedAt: fromMs(s.ColumnInt64(13))}
	if ms := s.ColumnInt64(12); ms != 0 {
		q.AnsweredAt = fromMs(ms)
	}
	err := json.Unmarshal([]byte(s.ColumnText(6)), &q.Options)
	return q, err
}

// AskQuestion records a question of q.Agent and posts line, its notice in
// the channel, in the same transaction: a question is never asked without
// a trace, nor announced without being kept. It fills in the id, state and
// time.
func (db *DB) AskQuestion(ctx context.Context, q Question, line func(Question) NewMessage) (Question, Message, error) {
	q.ID, q.State = newID("q_"), QuestionPending
	if q.Kind == "" {
		q.Kind = KindQuestion
	}
	if q.Options == nil {
		q.Options = []string{}
	}
	opts, err := json.Marshal(q.Options)
	if err != nil {
		return Question{}, Message{}, err
	}
	var msg Message
	err = db.write(ctx, func(conn querier) error {
		if _, err := getAgent(conn, q.Agent); err != nil {
			return err
		}
		now := db.nowMs()
		q.CreatedAt = fromMs(now)
		err := conn.execute(`INSERT INTO questions (id, workflow, tag, agent, kind, question, options_json, context, run_id, state, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{q.ID, q.Agent.Workflow, q.Agent.Tag, q.Agent.Name, q.Kind, q.Question, string(opts), q.Context, q.RunID, q.State, now}})
		if err != nil {
			return err
		}
		msg, err = appendMessage(conn, line(q), now)
		return err
	})
	if err != nil {
		return Question{}, Message{}, err
	}
	return q, msg, nil
}

// GetQuestion returns one question; an unknown id is not found.
func (db *DB) GetQuestion(ctx context.Context, id string) (Question, error) {
	var q Question
	err := db.read(ctx, func(conn querier) error {
		var err error
		q, err = getQuestion(conn, id)
		return err
	})
	return q, err
}

func getQuestion(conn querier, id string) (Question, error) {
	var q Question
	found := false
	err := conn.execute(`SELECT `+questionColumns+` FROM questions WHERE id = ?`, &execOptions{Args: []any{id},
		ResultFunc: func(s row) error {
			found = true
			var err error
			q, err = scanQuestion(s)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "no question %q: `agent-worker questions --all` lists them", id)
	}
	return q, err
}

// QuestionFilter narrows ListQuestions: to a workflow:tag (Scope), to one
// agent, and to pending ones unless All.
type QuestionFilter struct {
	Scope *Scope
	Agent *AgentKey
	All   bool
}

// ListQuestions returns questions, oldest first.
func (db *DB) ListQuestions(ctx context.Context, f QuestionFilter) ([]Question, error) {
	where, args := "1 = 1", []any{}
	if !f.All {
		where += " AND state = ?"
		args = append(args, QuestionPending)
	}
	if f.Scope != nil {
		where += " AND workflow = ? AND tag = ?"
		args = append(args, f.Scope.Workflow, f.Scope.Tag)
	}
	if f.Agent != nil {
		where += " AND workflow = ? AND tag = ? AND agent = ?"
		args = append(args, f.Agent.Workflow, f.Agent.Tag, f.Agent.Name)
	}
	out := []Question{}
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT `+questionColumns+` FROM questions WHERE `+where+` ORDER BY created_at, id`,
			&execOptions{Args: args, ResultFunc: func(s row) error {
				q, err := scanQuestion(s)
				out = append(out, q)
				return err
			}})
	})
	return out, err
}

// AnswerQuestion closes a pending question with answer, given by by, and
// posts reply (the answer as a message that mentions the asking agent, so
// that it wakes) in the same transaction. A question no longer pending is
// a conflict that says who answered it and when.
func (db *DB) AnswerQuestion(ctx context.Context, id, answer, by string, reply NewMessage) (Question, Message, error) {
	var q Question
	var msg Message
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`UPDATE questions SET state = ?, answer = ?, answered_by = ?, answered_at = ? WHERE id = ? AND state = ? AND kind = ?`,
			&execOptions{Args: []any{QuestionAnswered, answer, by, now, id, QuestionPending, KindQuestion}})
		if err != nil {
			return err
		}
		changed := conn.changes() > 0
		if q, err = getQuestion(conn, id); err != nil {
			return err
		}
		if !changed {
			if q.Kind == KindApproval && q.State == QuestionPending {
				return contract.Errorf(contract.CodeInvalid, "%s is an approval: approve it with `agent-worker approve %s` or deny it with `agent-worker deny %s --reason …`", q.ID, q.ID, q.ID)
			}
			return closedError(conn, q)
		}
		msg, err = appendMessage(conn, reply, now)
		return err
	})
	if err != nil {
		return Question{}, Message{}, err
	}
	return q, msg, nil
}

// DecideApproval approves or denies a pending approval (reason says why,
// by who decided) and posts line in the same transaction. A question that
// is not an approval is invalid; one no longer pending is a conflict that
// says who decided it.
func (db *DB) DecideApproval(ctx context.Context, id string, approve bool, reason, by string, line func(Question) NewMessage) (Question, Message, error) {
	state := ApprovalDenied
	if approve {
		state = ApprovalApproved
	}
	var q Question
	var msg Message
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`UPDATE questions SET state = ?, answer = ?, answered_by = ?, answered_at = ? WHERE id = ? AND state = ? AND kind = ?`,
			&execOptions{Args: []any{state, reason, by, now, id, QuestionPending, KindApproval}})
		if err != nil {
			return err
		}
		changed := conn.changes() > 0
		if q, err = getQuestion(conn, id); err != nil {
			return err
		}
		switch {
		case q.Kind != KindApproval:
			return contract.Errorf(contract.CodeInvalid, "%s is a question, not an approval: answer it with `agent-worker answer %s <answer>`", q.ID, q.ID)
		case !changed:
			return closedError(conn, q)
		}
		msg, err = appendMessage(conn, line(q), now)
		return err
	})
	if err != nil {
		return Question{}, Message{}, err
	}
	return q, msg, nil
}

// CloseApproval ends a pending approval without a decision: expired (its
// timeout passed) or cancelled (its run or agent stopped). It reports
// whether the approval was still pending.
func (db *DB) CloseApproval(ctx context.Context, id, state, why string) (bool, error) {
	closed := false
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE questions SET state = ?, answer = ?, answered_at = ? WHERE id = ? AND state = ? AND kind = ?`,
			&execOptions{Args: []any{state, why, db.nowMs(), id, QuestionPending, KindApproval}})
		closed = err == nil && conn.changes() > 0
		return err
	})
	return closed, err
}

// CancelApprovals cancels the pending approvals of an agent (all of a
// workflow:tag when k.Name is ""), returning their ids.
func (db *DB) CancelApprovals(ctx context.Context, k AgentKey, why string) ([]string, error) {
	var ids []string
	err := db.write(ctx, func(conn querier) error {
		ids = ids[:0]
		args := []any{QuestionCancelled, why, db.nowMs(), QuestionPending, KindApproval, k.Workflow, k.Tag}
		where := ""
		if k.Name != "" {
			where, args = " AND agent = ?", append(args, k.Name)
		}
		return conn.execute(`UPDATE questions SET state = ?, answer = ?, answered_at = ? WHERE state = ? AND kind = ? AND workflow = ? AND tag = ?`+where+` RETURNING id`,
			&execOptions{Args: args, ResultFunc: func(s row) error { ids = append(ids, s.ColumnText(0)); return nil }})
	})
	return ids, err
}

// endRunQuestions cancels the pending questions and approvals of run
// runID, which ends without a daemon to see it end (why: RunEnded and
// how), so that no one decides what no run waits for any more.
// FailRunningRuns and a cluster's recovery end them with the runs.
func endRunQuestions(conn querier, now int64, runID, why string) error {
	return conn.execute(`UPDATE questions SET state = ?, answer = ?, answered_at = ? WHERE state = ? AND run_id = ? AND run_id <> ''`,
		&execOptions{Args: []any{QuestionCancelled, why, now, QuestionPending, runID}})
}

// closedError says why a question can no longer be answered. One ended
// with its run names what its retry asked instead, if it has asked yet.
func closedError(conn querier, q Question) error {
	if strings.HasPrefix(q.Answer, RunEnded) && q.State == QuestionCancelled {
		what, verb, done := "question", "answer", "answered"
		if q.Kind == KindApproval {
			what, verb, done = "approval", "approve", "decided"
		}
		how := strings.TrimLeft(strings.TrimPrefix(q.Answer, RunEnded), ": ")
		if how != "" {
			how = " (" + how + ")"
		}
		next := ""
		err := conn.execute(`SELECT id FROM questions WHERE workflow = ? AND tag = ? AND agent = ? AND kind = ? AND state = ? AND created_at >= ? AND id <> ?
			ORDER BY created_at, id LIMIT 1`,
			&execOptions{Args: []any{q.Agent.Workflow, q.Agent.Tag, q.Agent.Name, q.Kind, QuestionPending, q.CreatedAt.UnixMilli(), q.ID},
				ResultFunc: func(s row) error { next = s.ColumnText(0); return nil }})
		if err != nil {
			return err
		}
		retry := fmt.Sprintf("its retry asks again: `agent-worker questions %s` lists it once it has", q.Agent)
		if next != "" {
			retry = fmt.Sprintf("its retry asks again: %s %s", verb, next)
		}
		return contract.Errorf(contract.CodeConflict, "%s %s can no longer be %s: the run that asked it ended%s; %s", what, q.ID, done, how, retry)
	}
	if q.State == ApprovalApproved || q.State == ApprovalDenied {
		return contract.Errorf(contract.CodeConflict, "%s was %s already, by %s at %s", q.ID, q.State, q.AnsweredBy, q.AnsweredAt.Local().Format(time.DateTime))
	}
	if q.State == QuestionAnswered {
		return contract.Errorf(contract.CodeConflict, "question %s was answered already, by %s at %s: %q",
			q.ID, q.AnsweredBy, q.AnsweredAt.Local().Format(time.DateTime), q.Answer)
	}
	return contract.Errorf(contract.CodeConflict, "question %s is %s: it can no longer be answered; if %s still needs it, tell it with `agent-worker send %s …`",
		q.ID, q.State, q.Agent, q.Agent)
}
