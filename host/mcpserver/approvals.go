package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// policyFresh is how long a tool call trusts the approvals policy it read
// for an agent: an edit of the workflow file applies within it.
const policyFresh = time.Second

// RunWaiter stops a run's idle and run timeouts while it waits for a
// person (plugins.Supervisor): resume starts them again, the run timeout
// with what was left of it.
type RunWaiter interface {
	Waiting(runID string) (resume func())
}

// gatePolicy is what the gate needs of an agent's approvals policy
// (*backend.ApprovalPolicy, whose methods take a nil policy as none).
type gatePolicy interface {
	Gates(tool string) bool
	WaitLimit() time.Duration
}

// cachedPolicy is an agent's approvals policy as read at a time.
type cachedPolicy struct {
	p  gatePolicy
	at time.Time
}

// policy returns the agent's approvals policy, read at most policyFresh
// ago.
func (s *Server) policy(ctx context.Context, me store.AgentKey) (gatePolicy, error) {
	s.mu.Lock()
	c, ok := s.policies[me]
	s.mu.Unlock()
	if ok && time.Since(c.at) < policyFresh {
		return c.p, nil
	}
	a, err := s.db.GetAgent(ctx, me)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.policies == nil {
		s.policies = map[store.AgentKey]cachedPolicy{}
	}
	s.policies[me] = cachedPolicy{a.Config.Approvals, time.Now()}
	s.mu.Unlock()
	return a.Config.Approvals, nil
}

// gate makes a call of a tool the agent's approvals: gate wait for a
// person: it returns nil once approved, the reason as an error once
// denied or timed out. The run's timeouts stop meanwhile.
func (s *Server) gate(ctx context.Context, me store.AgentKey, name string, args any) error {
	if s.db == nil {
		return nil // a server without a store (tests of the tool plumbing)
	}
	p, err := s.policy(ctx, me)
	if err != nil || !p.Gates(name) {
		return err
	}
	b, _ := json.Marshal(args)
	action := name + " " + string(b)
	if string(b) == "null" || string(b) == "{}" {
		action = name
	}
	return s.Await(ctx, me, runOf(ctx), action, p.WaitLimit())
}

// Await asks a person to approve action of agent me's run and waits, with
// the run's timeouts stopped: the gate of daemon tools, and of the sdk
// backend's shell commands (approval_wait).
func (s *Server) Await(ctx context.Context, me store.AgentKey, runID, action string, timeout time.Duration) error {
	if runID != "" && s.Runs != nil {
		defer s.Runs.Waiting(runID)()
	}
	return s.svc.AwaitApproval(ctx, team.ApprovalRequest{Agent: me, RunID: runID, Action: action, Timeout: timeout}, nil)
}

// addApprovalTools registers approval_wait: an action a person approves
// before the caller takes it (the sdk backend asks it for the shell
// commands its agent's approvals: gate).
func (s *Server) addApprovalTools(srv *mcp.Server, me store.AgentKey) {
	tool(s, srv, me, tools.ApprovalWait,
		"Ask a person to approve an action before you take it, and wait for the decision (up to the agent's approval_timeout, 30 minutes by default). "+
			"It returns once approved; a denial (with its reason) or a timeout is an error: then do not take the action.",
		func(ctx context.Context, in tools.ApprovalArgs) (tools.ApprovalResult, string, error) {
			action := strings.TrimSpace(in.Action)
			switch {
			case action == "":
				return tools.ApprovalResult{}, "", api.Errorf(api.CodeInvalid, "action is empty: write the exact action, e.g. run_shell: git push origin main")
			case utf8.RuneCountInString(action) > store.MaxQuestionLen:
				return tools.ApprovalResult{}, "", api.Errorf(api.CodeInvalid, "action is over %d characters: describe it briefly", store.MaxQuestionLen)
			}
			p, err := s.policy(ctx, me)
			if err != nil {
				return tools.ApprovalResult{}, "", err
			}
			if err := s.Await(ctx, me, runOf(ctx), action, p.WaitLimit()); err != nil {
				return tools.ApprovalResult{}, "", err
			}
			return tools.ApprovalResult{Approved: true}, "approved: " + action, nil
		})
}
