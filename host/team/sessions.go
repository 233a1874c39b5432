package team

import (
	"context"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// HookDeliveryLimit bounds the messages one hook hands a Claude Code
// session: a session that was away long gets the newest and the number of
// older ones, not a flood in its context.
const HookDeliveryLimit = 20

// Hook acts for the Claude Code session that calls a hook as agent k
// (issue 30). Only an external agent may be attached: the daemon runs
// every other backend itself, and two actors would answer as one agent.
// Every event but SessionEnd attaches the session (or moves its
// heartbeat); SessionStart, UserPromptSubmit and PostToolUse hand it the
// unread messages; Stop hands them over too, asking Claude not to stop
// while some wait, unless a Stop hook already held it (StopHookActive),
// so a session is never held twice in a row; SessionEnd detaches it.
func (s *Service) Hook(ctx context.Context, k store.AgentKey, call api.HookCall) (api.HookDelivery, error) {
	if !api.ValidHookEvent(call.Event) {
		return api.HookDelivery{}, api.Errorf(api.CodeInvalid, "unknown hook event %q: want one of %v", call.Event, api.HookEvents)
	}
	if call.SessionID == "" {
		return api.HookDelivery{}, api.Errorf(api.CodeInvalid, "the hook input has no session_id")
	}
	a, err := s.db.GetAgent(ctx, k)
	if err != nil {
		return api.HookDelivery{}, err
	}
	target := api.Target{Agent: k.Name, Workflow: k.Workflow, Tag: k.Tag}.Display()
	switch {
	case a.Backend != "external":
		return api.HookDelivery{}, api.Errorf(api.CodeConflict,
			"%s has backend %s, so the daemon runs it: a Claude Code session can act only as an agent with backend external (agent-worker new NAME --backend external)",
			target, a.Backend)
	case a.State == api.AgentStopped:
		return api.HookDelivery{}, api.Errorf(api.CodeConflict, "%s is stopped: start its workflow again to attach a session", target)
	}
	out := api.HookDelivery{Agent: target, Workflow: k.Workflow, Tag: k.Tag}
	if call.Event == api.HookSessionEnd {
		if ok, err := s.db.DetachSession(ctx, k, call.SessionID); err != nil || ok {
			s.log.Info("session detached", "agent", k.String(), "session", call.SessionID, "error", err)
			return out, err
		}
		return out, nil
	}
	if _, err := s.db.HeartbeatSession(ctx, k, call.SessionID, call.Cwd); err != nil {
		return api.HookDelivery{}, err
	}
	switch call.Event {
	case api.HookSessionStart:
		s.log.Info("session attached", "agent", k.String(), "session", call.SessionID, "cwd", call.Cwd)
		members, err := s.Members(ctx, store.Scope{Workflow: k.Workflow, Tag: k.Tag})
		if err != nil {
			return api.HookDelivery{}, err
		}
		out.System = a.System
		for _, m := range members {
			out.Members = append(out.Members, api.Member{Name: m.Name, State: m.State})
		}
	case api.HookStop:
		if call.StopHookActive {
			return out, nil
		}
	}
	ms, omitted, err := s.db.DeliverInbox(ctx, k, HookDeliveryLimit)
	if err != nil {
		return api.HookDelivery{}, err
	}
	out.Messages, out.Omitted = APIMessages(ms), omitted
	out.Block = call.Event == api.HookStop && len(ms) > 0
	return out, nil
}
