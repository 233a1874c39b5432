package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/store"
)

// approvalPoll is how often a waiting call also reads its approval from the
// store: a decision taken through another cluster member wakes no waiter
// here.
const approvalPoll = time.Second

// waiters are the gated calls of this daemon waiting on an approval, by
// its id; the zero value is ready to use.
type waiters struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func (w *waiters) add(id string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	w.ch[id] = c
	return c
}

func (w *waiters) remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.ch, id)
}

// wake tells the call waiting on id, if any here, that it was decided.
func (w *waiters) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.ch[id]; ok {
		close(c)
		delete(w.ch, id)
	}
}

// ApprovalRequest is a gated action of an agent's run: what it is, in the
// words a person approves (the command, the branch, the agent to spawn).
type ApprovalRequest struct {
	Agent   store.AgentKey
	RunID   string
	Action  string
	Timeout time.Duration
}

// AwaitApproval records a gated action, says so in the channel (with how
// to approve or deny it) and blocks until a person decides, the timeout
// passes or ctx ends (the run was cancelled). It returns nil once approved;
// a denial is an error with the reason, a timeout an error saying so.
// onPending, when set, hears the approval's id as soon as it is recorded.
func (s *Service) AwaitApproval(ctx context.Context, r ApprovalRequest, onPending func(store.Question)) error {
	q, msg, err := s.db.AskQuestion(ctx, store.Question{Agent: r.Agent, RunID: r.RunID, Kind: store.KindApproval, Question: r.Action},
		func(q store.Question) store.NewMessage {
			return store.NewMessage{Workflow: r.Agent.Workflow, Tag: r.Agent.Tag, Sender: SenderSystem, Kind: store.KindSystem,
				Content: fmt.Sprintf("%s waits for approval (%s): %s — approve with: agent-worker approve %s, or: agent-worker deny %s --reason …",
					r.Agent.Name, q.ID, r.Action, q.ID, q.ID)}
		})
	if err != nil {
		return err
	}
	s.Announce(msg)
	s.Notify(ctx, notify.Event{Kind: notify.Approval, Workflow: r.Agent.Workflow, Tag: r.Agent.Tag, Agent: r.Agent.Name,
		IDs: map[string]string{"question": q.ID, "run": q.RunID}, Text: msg.Content,
		Fields: map[string]any{"action": r.Action, "timeout": r.Timeout.String()}})
	if onPending != nil {
		onPending(q)
	}
	decided := s.decided.add(q.ID)
	defer s.decided.remove(q.ID)
	timeout := time.NewTimer(r.Timeout)
	defer timeout.Stop()
	poll := time.NewTicker(approvalPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			s.closeApproval(q.ID, store.QuestionCancelled, "the run ended while it waited")
			return api.Errorf(api.CodePermission, "%s: not approved: the run ended while it waited (%s)", r.Action, q.ID)
		case <-timeout.C:
			s.closeApproval(q.ID, store.QuestionExpired, "not approved within "+r.Timeout.String())
			return api.Errorf(api.CodePermission, "%s: not approved within %s (%s)", r.Action, r.Timeout, q.ID)
		case <-decided:
		case <-poll.C:
		}
		got, err := s.db.GetQuestion(context.WithoutCancel(ctx), q.ID)
		if err != nil {
			if api.ErrorCode(err) == api.CodeNotFound {
				return api.Errorf(api.CodePermission, "%s: not approved: the agent was removed (%s)", r.Action, q.ID)
			}
			continue // the store is down: wait on
		}
		switch got.State {
		case store.QuestionPending:
			continue
		case store.ApprovalApproved:
			return nil
		case store.ApprovalDenied:
			why := got.Answer
			if why == "" {
				why = "no reason given"
			}
			return api.Errorf(api.CodePermission, "%s: denied by %s: %s", r.Action, got.AnsweredBy, why)
		default:
			return api.Errorf(api.CodePermission, "%s: %s (%s)", r.Action, got.State, strings.TrimSpace(got.Answer))
		}
	}
}

// closeApproval ends an approval nobody decided, as the call gives up.
func (s *Service) closeApproval(id, state, why string) {
	if _, err := s.db.CloseApproval(context.Background(), id, state, why); err != nil {
		s.log.Warn("close approval", "id", id, "state", state, "error", err)
	}
}

// Decide approves or denies a pending approval (by: who; reason: why, for
// a denial) and wakes its gated call.
func (s *Service) Decide(ctx context.Context, id string, approve bool, reason, by string) (store.Question, error) {
	if by == "" {
		by = SenderUser
	}
	if len(by) > 100 || strings.ContainsAny(by, "\n\r") {
		return store.Question{}, api.Errorf(api.CodeInvalid, "by must be a short name on one line")
	}
	reason = strings.TrimSpace(reason)
	q, msg, err := s.db.DecideApproval(ctx, id, approve, reason, by, func(q store.Question) store.NewMessage {
		line := fmt.Sprintf("%s approved %s for %s: %s", by, q.ID, q.Agent.Name, q.Question)
		if !approve {
			line = fmt.Sprintf("%s denied %s for %s: %s", by, q.ID, q.Agent.Name, q.Question)
			if reason != "" {
				line += " — " + reason
			}
		}
		return store.NewMessage{Workflow: q.Agent.Workflow, Tag: q.Agent.Tag, Sender: SenderSystem, Kind: store.KindSystem, Content: line}
	})
	if err != nil {
		return store.Question{}, err
	}
	s.Announce(msg)
	s.decided.wake(q.ID)
	return q, nil
}

// CancelApprovals ends the pending approvals of an agent (every agent of
// the workflow:tag when k.Name is ""), as a pause or a cancel does: each
// gated call fails saying why.
func (s *Service) CancelApprovals(ctx context.Context, k store.AgentKey, why string) error {
	ids, err := s.db.CancelApprovals(ctx, k, why)
	for _, id := range ids {
		s.decided.wake(id)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
