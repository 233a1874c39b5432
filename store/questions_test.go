package store

import (
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A question is kept with its channel line; answering it closes it once,
// with the reply in the channel, and a second answer is a conflict that
// names who answered; listing shows pending ones unless all.
func TestQuestionsAskAnswerOnce(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice", "bob")
	alice := AgentKey{Name: "alice", Workflow: "team", Tag: "t"}
	line := func(q Question) NewMessage {
		return NewMessage{Workflow: "team", Tag: "t", Sender: "system", Kind: KindSystem, Content: "alice asks " + q.ID}
	}
	q, msg, err := db.AskQuestion(ctx, Question{Agent: alice, Question: "pg or sqlite?", Options: []string{"pg", "sqlite"}, RunID: "run_1"}, line)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(q.ID, "q_") || q.State != QuestionPending || msg.Content != "alice asks "+q.ID {
		t.Fatalf("asked %+v with line %q", q, msg.Content)
	}
	if _, _, err := db.AskQuestion(ctx, Question{Agent: AgentKey{Name: "zed", Workflow: "team", Tag: "t"}, Question: "?"}, line); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("a question of an unknown agent: %v, want not found", err)
	}
	pending, err := db.ListQuestions(ctx, QuestionFilter{Scope: &team})
	if err != nil || len(pending) != 1 || pending[0].ID != q.ID || len(pending[0].Options) != 2 || pending[0].RunID != "run_1" {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	reply := NewMessage{Workflow: "team", Tag: "t", Sender: "user", Content: "@alice pg", Recipients: []string{"alice"}}
	got, rmsg, err := db.AnswerQuestion(ctx, q.ID, "pg", "user", reply)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != QuestionAnswered || got.Answer != "pg" || got.AnsweredBy != "user" || got.AnsweredAt.IsZero() || rmsg.Content != "@alice pg" {
		t.Errorf("answered %+v with %q", got, rmsg.Content)
	}
	if _, _, err := db.AnswerQuestion(ctx, q.ID, "sqlite", "someone", reply); contract.ErrorCode(err) != contract.CodeConflict ||
		!strings.Contains(err.Error(), "answered already, by user") {
		t.Errorf("second answer: %v, want a conflict naming who answered", err)
	}
	if _, _, err := db.AnswerQuestion(ctx, "q_nope", "x", "user", reply); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("answer to an unknown id: %v, want not found", err)
	}
	if left, err := db.ListQuestions(ctx, QuestionFilter{Agent: &alice}); err != nil || len(left) != 0 {
		t.Errorf("pending after the answer = %+v, %v", left, err)
	}
	if all, err := db.ListQuestions(ctx, QuestionFilter{All: true}); err != nil || len(all) != 1 || all[0].State != QuestionAnswered {
		t.Errorf("all = %+v, %v", all, err)
	}
}

// A daemon that stops during a run leaves its questions and approvals
// pending; the next start fails the run and ends them with it (cancelled,
// "the run ended…"), so nobody decides what no run waits for. Deciding
// one then is a conflict that names what the run's retry asked instead,
// once it has; what other runs asked, or an outside agent, stays pending.
func TestQuestionsEndWithTheirDeadRun(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice", "bob")
	alice := AgentKey{Name: "alice", Workflow: "team", Tag: "t"}
	bob := AgentKey{Name: "bob", Workflow: "team", Tag: "t"}
	line := func(q Question) NewMessage {
		return NewMessage{Workflow: "team", Tag: "t", Sender: "system", Kind: KindSystem, Content: "asks " + q.ID}
	}
	for _, r := range []Run{{ID: "run_dead", Agent: alice}, {ID: "run_done", Agent: bob}} {
		if _, err := db.StartRun(ctx, Run{ID: r.ID, Agent: r.Agent, Backend: "mock", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.FinishRun(ctx, "run_done", contract.RunSucceeded, "", nil); err != nil {
		t.Fatal(err)
	}
	ask := func(q Question) Question {
		t.Helper()
		got, _, err := db.AskQuestion(ctx, q, line)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	approval := ask(Question{Agent: alice, RunID: "run_dead", Kind: KindApproval, Question: "git push"})
	question := ask(Question{Agent: alice, RunID: "run_dead", Question: "pg or sqlite?"})
	kept := ask(Question{Agent: bob, RunID: "run_done", Question: "which file?"}) // its run ended well: the answer wakes bob
	outside := ask(Question{Agent: bob, Question: "from outside"})

	if n, err := db.FailRunningRuns(ctx, "the daemon stopped during this run"); err != nil || n != 1 {
		t.Fatalf("FailRunningRuns = %d, %v; want 1", n, err)
	}
	for _, id := range []string{approval.ID, question.ID} {
		q, err := db.GetQuestion(ctx, id)
		if err != nil || q.State != QuestionCancelled || q.Answer != RunEndedDaemonStopped {
			t.Errorf("%s after its run failed = %+v, %v; want cancelled, %q", id, q, err, RunEndedDaemonStopped)
		}
	}
	pending, err := db.ListQuestions(ctx, QuestionFilter{})
	ids := map[string]bool{}
	for _, q := range pending {
		ids[q.ID] = true
	}
	if err != nil || len(pending) != 2 || !ids[kept.ID] || !ids[outside.ID] {
		t.Errorf("pending = %+v, %v; want only %s and %s", pending, err, kept.ID, outside.ID)
	}

	decide := func() error {
		_, _, err := db.DecideApproval(ctx, approval.ID, true, "", "user", line)
		return err
	}
	if err := decide(); contract.ErrorCode(err) != contract.CodeConflict ||
		!strings.Contains(err.Error(), "approval "+approval.ID+" can no longer be decided: the run that asked it ended (the daemon stopped during it)") ||
		!strings.Contains(err.Error(), "`agent-worker questions alice@team:t` lists it once it has") {
		t.Errorf("approving the dead run's approval: %v", err)
	}
	retry := ask(Question{Agent: alice, RunID: "run_retry", Kind: KindApproval, Question: "git push"})
	if err := decide(); contract.ErrorCode(err) != contract.CodeConflict || !strings.HasSuffix(err.Error(), "its retry asks again: approve "+retry.ID) {
		t.Errorf("approving the dead run's approval after the retry asked: %v", err)
	}
	_, _, err = db.AnswerQuestion(ctx, question.ID, "pg", "user", line(question))
	if contract.ErrorCode(err) != contract.CodeConflict || !strings.Contains(err.Error(), "question "+question.ID+" can no longer be answered: the run that asked it ended") {
		t.Errorf("answering the dead run's question: %v", err)
	}
	if _, _, err := db.DecideApproval(ctx, retry.ID, true, "", "user", line); err != nil {
		t.Errorf("approving the retry's approval: %v", err)
	}
}
