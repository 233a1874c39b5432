package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agent-worker/agent-worker/sdk/tools"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Question is what an agent asked the owner, as GET /questions lists it.
type Question = tools.Question

// QuestionList is GET /questions' answer, oldest first.
type QuestionList struct {
	Questions []Question `json:"questions"`
}

// Questions is GET /questions: the pending questions (every one with all),
// of target when it is set (an agent or a workflow target).
func (c *Client) Questions(ctx context.Context, target *Target, all bool) ([]Question, error) {
	q := url.Values{}
	if target != nil {
		q.Set("target", target.String())
	}
	if all {
		q.Set("all", "true")
	}
	path := "/questions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l QuestionList
	return l.Questions, c.do(ctx, http.MethodGet, path, nil, &l)
}

// AnswerQuestion is POST /questions/{id}/answer.
func (c *Client) AnswerQuestion(ctx context.Context, id, answer string) (Question, error) {
	return c.AnswerQuestionAs(ctx, id, answer, "")
}

// AnswerQuestionAs is AnswerQuestion recording who answered (the console
// says the owner answered through it).
func (c *Client) AnswerQuestionAs(ctx context.Context, id, answer, by string) (Question, error) {
	var out Question
	return out, c.do(ctx, http.MethodPost, "/questions/"+url.PathEscape(id)+"/answer", contract.AnswerRequest{Answer: answer, By: by}, &out)
}

// Decide is POST /questions/{id}/approve (approve) or /deny.
func (c *Client) Decide(ctx context.Context, id string, approve bool, reason string) (Question, error) {
	return c.DecideAs(ctx, id, approve, reason, "")
}

// DecideAs is Decide recording who decided.
func (c *Client) DecideAs(ctx context.Context, id string, approve bool, reason, by string) (Question, error) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	var out Question
	return out, c.do(ctx, http.MethodPost, "/questions/"+url.PathEscape(id)+"/"+verb, contract.DecideRequest{Reason: reason, By: by}, &out)
}
