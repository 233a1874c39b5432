package store

import (
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
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
	if _, _, err := db.AskQuestion(ctx, Question{Agent: AgentKey{Name: "zed", Workflow: "team", Tag: "t"}, Question: "?"}, line); api.ErrorCode(err) != api.CodeNotFound {
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
	if _, _, err := db.AnswerQuestion(ctx, q.ID, "sqlite", "someone", reply); api.ErrorCode(err) != api.CodeConflict ||
		!strings.Contains(err.Error(), "answered already, by user") {
		t.Errorf("second answer: %v, want a conflict naming who answered", err)
	}
	if _, _, err := db.AnswerQuestion(ctx, "q_nope", "x", "user", reply); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("answer to an unknown id: %v, want not found", err)
	}
	if left, err := db.ListQuestions(ctx, QuestionFilter{Agent: &alice}); err != nil || len(left) != 0 {
		t.Errorf("pending after the answer = %+v, %v", left, err)
	}
	if all, err := db.ListQuestions(ctx, QuestionFilter{All: true}); err != nil || len(all) != 1 || all[0].State != QuestionAnswered {
		t.Errorf("all = %+v, %v", all, err)
	}
}
