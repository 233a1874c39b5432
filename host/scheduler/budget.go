package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// spentBudget is a budget that its spend has reached.
type spentBudget struct {
	budget store.Budget
	spent  store.RunStats
	limit  string // which limit, in words: "runs 2 of 2"
}

// overBudget reports the first budget of a's workflow:tag, or of a itself,
// whose spend since the workflow (re)started has reached one of its
// limits; nil when a may run.
func (s *Scheduler) overBudget(ctx context.Context, a store.Agent) (*spentBudget, error) {
	budgets, err := s.db.Budgets(ctx, a.Key().Scope())
	if err != nil || len(budgets) == 0 {
		return nil, err
	}
	wf, err := s.db.GetWorkflow(ctx, a.Workflow, a.Tag)
	if err != nil {
		return nil, err
	}
	for _, b := range budgets {
		var st store.RunStats
		switch b.Agent {
		case "":
			st, err = s.db.Stats(ctx, a.Key().Scope(), wf.StartedAt)
		case a.Name:
			st, err = s.db.AgentStats(ctx, a.Key(), wf.StartedAt)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if limit := reached(b, st); limit != "" {
			return &spentBudget{budget: b, spent: st, limit: limit}, nil
		}
	}
	return nil, nil
}

// reached names the first limit of b that st has reached, or "".
func reached(b store.Budget, st store.RunStats) string {
	switch {
	case b.Runs != nil && int64(st.Runs) >= *b.Runs:
		return fmt.Sprintf("runs: %d of %d", st.Runs, *b.Runs)
	case b.Tokens != nil && st.InputTokens+st.OutputTokens >= *b.Tokens:
		return fmt.Sprintf("tokens: %d of %d", st.InputTokens+st.OutputTokens, *b.Tokens)
	case b.USD != nil && st.CostUSD >= *b.USD:
		return fmt.Sprintf("usd: $%.4f of $%.4f", st.CostUSD, *b.USD)
	}
	return ""
}

// stopOverBudget moves the agent (for its own budget) or every agent of
// the workflow (for the workflow's) to over_budget, and says so once in
// the channel: which budget, what was spent, how to go on.
func (s *Scheduler) stopOverBudget(ctx context.Context, a store.Agent, sb *spentBudget) {
	scope := a.Key().Scope()
	keys := []store.AgentKey{a.Key()}
	target := api.Target{Agent: a.Name, Workflow: a.Workflow, Tag: a.Tag}.Display()
	if sb.budget.Agent == "" {
		agents, err := s.db.ListAgents(ctx, store.AgentFilter{Workflow: a.Workflow, Tag: a.Tag})
		if err != nil {
			s.log.Warn("budget: list agents", "workflow", scope.String(), "error", err)
			return
		}
		keys = keys[:0]
		for _, m := range agents {
			keys = append(keys, m.Key())
		}
		target = api.Target{Workflow: a.Workflow, Tag: a.Tag}.Display()
	}
	why := fmt.Sprintf("over budget (%s)", sb.limit)
	moved := 0
	for _, k := range keys {
		if s.moveState(ctx, k, []api.AgentState{api.AgentIdle}, api.AgentOverBudget, why) {
			moved++
		}
	}
	if moved == 0 {
		return // another agent's loop said it already
	}
	line := fmt.Sprintf("%s is over its budget: %s; spent %d run(s), %d tokens, $%.4f since the workflow started. Nothing more runs; messages wait unread. "+
		"Raise it with `agent-worker budget %s set …` (or clear it), then `agent-worker resume %s`.",
		target, sb.limit, sb.spent.Runs, sb.spent.InputTokens+sb.spent.OutputTokens, sb.spent.CostUSD, target, target)
	if _, err := s.team.Send(context.WithoutCancel(ctx), team.SendRequest{Scope: scope, From: team.SenderSystem, Kind: store.KindSystem, Content: line}); err != nil {
		s.log.Warn("budget: post the notice", "workflow", scope.String(), "error", err)
	}
	s.log.Warn("over budget", "target", target, "limit", sb.limit, "agents", len(keys), "detail", strings.TrimSpace(why))
}

// errOverBudget is the cause of a run cancelled by a hard budget.
var errOverBudget = errors.New("cancelled: it crossed a hard budget")

// overBudgetError ends a run that crossed a hard budget; it is not retried.
type overBudgetError struct{ spent *spentBudget }

func (e *overBudgetError) Error() string {
	return "cancelled: the run crossed a hard budget (" + e.spent.limit + ")"
}

// hardBudget returns, when a's workflow or a itself has a hard budget, a
// check of a run's usage so far: it reports the budget the spend before the
// run plus that usage has gone past (tokens or dollars; runs are checked
// before a run starts), or nil.
func (s *Scheduler) hardBudget(ctx context.Context, a store.Agent) (func(backend.Usage) *spentBudget, error) {
	budgets, err := s.db.Budgets(ctx, a.Key().Scope())
	if err != nil || len(budgets) == 0 {
		return nil, err
	}
	wf, err := s.db.GetWorkflow(ctx, a.Workflow, a.Tag)
	if err != nil {
		return nil, err
	}
	type base struct {
		b  store.Budget
		st store.RunStats
	}
	var hard []base
	for _, b := range budgets {
		if !b.Hard || (b.Agent != "" && b.Agent != a.Name) {
			continue
		}
		var st store.RunStats
		if b.Agent == "" {
			st, err = s.db.Stats(ctx, a.Key().Scope(), wf.StartedAt)
		} else {
			st, err = s.db.AgentStats(ctx, a.Key(), wf.StartedAt)
		}
		if err != nil {
			return nil, err
		}
		b.Runs = nil
		hard = append(hard, base{b, st})
	}
	if len(hard) == 0 {
		return nil, nil
	}
	return func(u backend.Usage) *spentBudget {
		for _, h := range hard {
			st := h.st
			st.Runs++
			st.InputTokens += u.InputTokens
			st.OutputTokens += u.OutputTokens
			st.CostUSD += u.CostUSD
			if over(h.b, st) {
				return &spentBudget{budget: h.b, spent: st, limit: reached(h.b, st)}
			}
		}
		return nil
	}, nil
}

// over reports whether st has gone past (not just reached) a token or
// dollar limit of b.
func over(b store.Budget, st store.RunStats) bool {
	return b.Tokens != nil && st.InputTokens+st.OutputTokens > *b.Tokens || b.USD != nil && st.CostUSD > *b.USD
}
