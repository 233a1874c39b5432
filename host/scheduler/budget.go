package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// budgets are the caps that apply to one agent, read once per turn:
// its workflow:tag's and its own, and when its workflow (re)started.
type budgets struct {
	list  []store.Budget
	since time.Time
}

// budgetsOf reads the budgets of a's workflow:tag that apply to a; wf is
// the workflow as the turn read it.
func (s *Scheduler) budgetsOf(ctx context.Context, a store.Agent, wf store.Workflow) (budgets, error) {
	all, err := s.db.Budgets(ctx, a.Key().Scope())
	out := budgets{since: wf.StartedAt}
	for _, b := range all {
		if b.Agent == "" || b.Agent == a.Name {
			out.list = append(out.list, b)
		}
	}
	return out, err
}

// budgetSpend pairs each budget keep accepts with what it covers has
// spent since the workflow (re)started.
func (s *Scheduler) budgetSpend(ctx context.Context, a store.Agent, bs budgets, keep func(store.Budget) bool) ([]spentBudget, error) {
	var out []spentBudget
	for _, b := range bs.list {
		if !keep(b) {
			continue
		}
		var st store.RunStats
		var err error
		if b.Agent == "" {
			st, err = s.db.Stats(ctx, a.Key().Scope(), bs.since)
		} else {
			st, err = s.db.AgentStats(ctx, a.Key(), bs.since)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, spentBudget{budget: b, spent: st})
	}
	return out, nil
}

// overBudget reports the first budget whose spend has reached one of its
// limits; nil when a may run.
func (s *Scheduler) overBudget(ctx context.Context, a store.Agent, bs budgets) (*spentBudget, error) {
	spent, err := s.budgetSpend(ctx, a, bs, func(store.Budget) bool { return true })
	for _, sb := range spent {
		if sb.limit = reached(sb.budget, sb.spent); sb.limit != "" {
			return &sb, nil
		}
	}
	return nil, err
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
	s.log.Warn("over budget", "target", target, "limit", sb.limit, "agents", moved)
	s.notifyOverBudget(ctx, a, sb, target, line)
}

// errOverBudget is the cause of a run cancelled by a hard budget.
var errOverBudget = errors.New("cancelled: it crossed a hard budget")

// overBudgetError ends a run that crossed a hard budget; it is not retried.
type overBudgetError struct{ spent *spentBudget }

func (e *overBudgetError) Error() string {
	return "cancelled: the run crossed a hard budget (" + e.spent.limit + ")"
}

// hardBudget returns, when a hard budget applies to a, a check of a
// run's usage so far: it reports the budget that the spend before the run
// plus that usage has gone past (tokens or dollars; runs are checked before
// a run starts), or nil. The spend is read at each attempt.
func (s *Scheduler) hardBudget(ctx context.Context, a store.Agent, bs budgets) (func(backend.Usage) *spentBudget, error) {
	hard, err := s.budgetSpend(ctx, a, bs, func(b store.Budget) bool { return b.Hard })
	if err != nil || len(hard) == 0 {
		return nil, err
	}
	return func(u backend.Usage) *spentBudget {
		for _, h := range hard {
			st := h.spent
			st.Runs++
			st.InputTokens += u.InputTokens
			st.OutputTokens += u.OutputTokens
			st.CostUSD += u.CostUSD
			if over(h.budget, st) {
				return &spentBudget{budget: h.budget, spent: st, limit: reached(h.budget, st)}
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
