package team

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/store"
)

// AskRequest is a question an agent puts to the owner (ask_user).
type AskRequest struct {
	Agent    store.AgentKey
	RunID    string
	Question string
	Options  []string
	Context  string
}

// Ask records an agent's question for the owner and says so in the
// channel, with how to answer; it returns at once; the answer comes later
// as a message that mentions the agent (Answer).
func (s *Service) Ask(ctx context.Context, r AskRequest) (store.Question, error) {
	if err := checkQuestion(r); err != nil {
		return store.Question{}, err
	}
	q, msg, err := s.db.AskQuestion(ctx, store.Question{Agent: r.Agent, RunID: r.RunID, Question: strings.TrimSpace(r.Question),
		Options: r.Options, Context: strings.TrimSpace(r.Context)}, func(q store.Question) store.NewMessage {
		line := fmt.Sprintf("%s asks the owner (%s): %s", r.Agent.Name, q.ID, q.Question)
		if len(q.Options) > 0 {
			line += " [options: " + strings.Join(q.Options, " | ") + "]"
		}
		line += fmt.Sprintf(" — answer with: agent-worker answer %s <answer>", q.ID)
		return store.NewMessage{Workflow: r.Agent.Workflow, Tag: r.Agent.Tag, Sender: SenderSystem, Kind: store.KindSystem, Content: line}
	})
	if err != nil {
		return store.Question{}, err
	}
	s.Announce(msg)
	s.Notify(ctx, notify.Event{Kind: notify.Question, Workflow: r.Agent.Workflow, Tag: r.Agent.Tag, Agent: r.Agent.Name,
		IDs: map[string]string{"question": q.ID, "run": q.RunID}, Text: msg.Content,
		Fields: map[string]any{"question": q.Question, "options": q.Options, "context": q.Context}})
	return q, nil
}

// checkQuestion refuses an empty or oversized question and bad options.
func checkQuestion(r AskRequest) error {
	q := strings.TrimSpace(r.Question)
	switch {
	case q == "":
		return api.Errorf(api.CodeInvalid, "question is empty: write what you need the owner to decide")
	case utf8.RuneCountInString(q) > store.MaxQuestionLen:
		return api.Errorf(api.CodeInvalid, "question is %d characters, over %d: put the details in context or a document and ask briefly",
			utf8.RuneCountInString(q), store.MaxQuestionLen)
	case utf8.RuneCountInString(r.Context) > 4*store.MaxQuestionLen:
		return api.Errorf(api.CodeInvalid, "context is over %d characters: put it in a document and name it", 4*store.MaxQuestionLen)
	case len(r.Options) > store.MaxQuestionOptions:
		return api.Errorf(api.CodeInvalid, "%d options, over %d: ask a narrower question", len(r.Options), store.MaxQuestionOptions)
	}
	seen := map[string]bool{}
	for i, o := range r.Options {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			return api.Errorf(api.CodeInvalid, "option %d is empty", i+1)
		case seen[strings.ToLower(o)]:
			return api.Errorf(api.CodeInvalid, "option %q is given twice", o)
		case utf8.RuneCountInString(o) > 200:
			return api.Errorf(api.CodeInvalid, "option %d is over 200 characters: keep options short and explain them in context", i+1)
		}
		seen[strings.ToLower(o)] = true
		r.Options[i] = o
	}
	return nil
}

// Answer closes a pending question with answer (one of its options, in
// any case, or free text) given by by, and posts the answer to the asking
// agent as a message that mentions it, so that it wakes through its inbox.
// An unknown id is not found; a closed question is a conflict that says
// who answered it.
func (s *Service) Answer(ctx context.Context, id, answer, by string) (store.Question, error) {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return store.Question{}, api.Errorf(api.CodeInvalid, "the answer is empty: write one of the options or your answer in words")
	}
	if by == "" {
		by = SenderUser
	}
	q, err := s.db.GetQuestion(ctx, id)
	if err != nil {
		return store.Question{}, err
	}
	for _, o := range q.Options {
		if strings.EqualFold(o, answer) {
			answer = o
		}
	}
	reply, err := s.Compose(ctx, SendRequest{Scope: q.Agent.Scope(), From: SenderUser,
		Content: fmt.Sprintf("@%s answer to %s (%q): %s", q.Agent.Name, q.ID, api.OneLine(q.Question, 200), answer)})
	if err != nil {
		return store.Question{}, err
	}
	q, msg, err := s.db.AnswerQuestion(ctx, id, answer, by, reply)
	if err != nil {
		return store.Question{}, err
	}
	s.Announce(msg)
	return q, nil
}

// APIQuestion is a question as the API shows it.
func APIQuestion(q store.Question) api.Question {
	return api.Question{ID: q.ID, Agent: q.Agent.String(), Kind: q.Kind, Question: q.Question, Options: q.Options, Context: q.Context,
		RunID: q.RunID, State: q.State, Answer: q.Answer, AnsweredBy: q.AnsweredBy, AnsweredAt: q.AnsweredAt, CreatedAt: q.CreatedAt}
}
