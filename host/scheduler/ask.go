package scheduler

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// Ask writes a user's message to an agent into the channel and follows the
// run the scheduler starts for it: the same path every run takes (`ask`,
// `serve`). onEvent, when set, gets the run's events on the caller's
// goroutine. If ctx ends first (the client went away) the run is
// cancelled and not retried.
func (s *Scheduler) Ask(ctx context.Context, t api.Target, message string, onEvent func(backend.Event)) (api.RunResult, error) {
	agent, err := s.db.GetAgent(ctx, store.AgentKey{Name: t.Agent, Workflow: t.Workflow, Tag: t.Tag})
	if err != nil {
		return api.RunResult{}, err
	}
	switch {
	case agent.Backend == "external":
		return api.RunResult{}, api.Errorf(api.CodeInvalid, "%s has backend external: an outside MCP client acts as it, the daemon never runs it", t.Display())
	case agent.State == api.AgentFailed:
		return api.RunResult{}, api.Errorf(api.CodeConflict, "%s is failed (%s): fix the cause, then `agent-worker resume %s`", t.Display(), agent.Error, t.Display())
	case agent.State == api.AgentStopped:
		return api.RunResult{}, api.Errorf(api.CodeConflict, "%s is stopped (its workflow was stopped or it left the workflow file): start the workflow again", t.Display())
	case agent.State == api.AgentPaused, agent.State == api.AgentOverBudget:
		return api.RunResult{}, api.Errorf(api.CodeConflict, "%s is %s and starts no run: `agent-worker resume %s` first", t.Display(), agent.State, t.Display())
	}
	if wf, err := s.db.GetWorkflow(ctx, agent.Workflow, agent.Tag); err == nil && wf.State != api.WorkflowRunning {
		scope := api.Target{Workflow: agent.Workflow, Tag: agent.Tag}.Display()
		return api.RunResult{}, api.Errorf(api.CodeConflict, "%s's workflow %s is %s and starts no run: `agent-worker resume %s` first", t.Display(), scope, wf.State, scope)
	}
	s.Add(agent.Key()) // in a cluster it may have been created on another member
	start := time.Now()
	queue := 0
	if onEvent != nil {
		queue = AskQueue
	}
	w, err := s.Watch(agent.Key(), queue)
	if err != nil {
		return api.RunResult{}, err
	}
	m, err := s.team.Send(ctx, team.SendRequest{Scope: agent.Key().Scope(), From: team.SenderUser, Content: "@" + agent.Name + " " + message})
	if err != nil {
		w.Stop(false)
		return api.RunResult{}, err
	}
	w.Arm(m.Seq)
	// The run's events are passed on here, on the caller's goroutine: a
	// client that stops reading holds up only itself.
	for {
		select {
		case <-ctx.Done():
			w.Stop(true)
			return api.RunResult{}, ctx.Err()
		case e := <-w.Events():
			onEvent(e)
		case <-w.Dropped():
			w.Stop(false)
			return api.RunResult{}, api.Errorf(api.CodeUnavailable,
				"you fell behind the run's events and were dropped; the run goes on: read %s's reply in its channel with since_seq=%d", t.Display(), m.Seq)
		case r := <-w.Done():
			for drained := false; !drained; {
				select {
				case e := <-w.Events():
					onEvent(e)
				default:
					drained = true
				}
			}
			if r.Err != nil {
				return api.RunResult{}, r.Err
			}
			out := r.Out
			return api.RunResult{RunID: out.Run.ID, Agent: t.Display(), Content: out.Result, DurationMS: time.Since(start).Milliseconds(),
				Replies: s.replies(ctx, agent, m.Seq),
				Usage:   contract.Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens, CostUSD: out.Usage.CostUSD}}, nil
		}
	}
}

// maxReplies bounds the replies a RunResult carries; the channel has the
// rest.
const maxReplies = 50

// replies are the messages agent wrote in its channel after the asking
// message (seq after): to the team, or a direct message to the user. A
// reply that cannot be read leaves the result without replies; the run
// itself succeeded.
func (s *Scheduler) replies(ctx context.Context, agent store.Agent, after int64) []api.Message {
	ms, err := s.team.Read(ctx, agent.Key().Scope(), "", after, 1000)
	if err != nil {
		return nil
	}
	var out []api.Message
	for _, m := range ms {
		if m.Sender == agent.Name && m.Kind == store.KindMessage && (m.To == "" || m.To == team.SenderUser) && len(out) < maxReplies {
			out = append(out, team.APIMessage(m))
		}
	}
	return out
}
