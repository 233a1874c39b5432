package store

import (
	"context"
	"time"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Budget caps what a workflow:tag (Agent "") or one agent of it may spend
// since the workflow (re)started. A nil limit is unset.
type Budget struct {
	Workflow, Tag, Agent string
	USD                  *float64
	Tokens, Runs         *int64
	// Hard: a run in flight that crosses the budget is cancelled instead
	// of finishing.
	Hard      bool
	UpdatedAt time.Time
}

// Scope is the budget's workflow:tag.
func (b Budget) Scope() Scope { return Scope{Workflow: b.Workflow, Tag: b.Tag} }

// SetBudget creates or replaces a budget.
func (db *DB) SetBudget(ctx context.Context, b Budget) error {
	if b.USD != nil && *b.USD < 0 || b.Tokens != nil && *b.Tokens < 0 || b.Runs != nil && *b.Runs < 0 {
		return contract.Errorf(contract.CodeInvalid, "a budget cannot be negative: give usd, tokens or runs as 0 or more (0 stops every run), or clear the budget")
	}
	return db.write(ctx, func(conn querier) error {
		if _, err := getWorkflow(conn, b.Workflow, b.Tag); err != nil {
			return err
		}
		if b.Agent != "" {
			if _, err := getAgent(conn, AgentKey{Name: b.Agent, Workflow: b.Workflow, Tag: b.Tag}); err != nil {
				return err
			}
		}
		return conn.execute(`INSERT INTO budgets (workflow, tag, agent, usd, tokens, runs, hard, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workflow, tag, agent) DO UPDATE SET usd = excluded.usd,
			tokens = excluded.tokens, runs = excluded.runs, hard = excluded.hard, updated_at = excluded.updated_at`,
			&execOptions{Args: []any{b.Workflow, b.Tag, b.Agent, orNull(b.USD), orNull(b.Tokens), orNull(b.Runs), b.Hard, db.nowMs()}})
	})
}

// ClearBudget removes a budget; clearing one that is not set is no error.
func (db *DB) ClearBudget(ctx context.Context, s Scope, agent string) error {
	return db.write(ctx, func(conn querier) error {
		return conn.execute(`DELETE FROM budgets WHERE workflow = ? AND tag = ? AND agent = ?`,
			&execOptions{Args: []any{s.Workflow, s.Tag, agent}})
	})
}

// Budgets returns the budgets of a workflow:tag, its own (Agent "") first.
func (db *DB) Budgets(ctx context.Context, s Scope) ([]Budget, error) {
	var out []Budget
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT agent, usd, tokens, runs, hard, updated_at FROM budgets WHERE workflow = ? AND tag = ? ORDER BY agent`,
			&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
				b := Budget{Workflow: s.Workflow, Tag: s.Tag, Agent: st.ColumnText(0), Hard: st.ColumnBool(4), UpdatedAt: fromMs(st.ColumnInt64(5))}
				if st.ColumnType(1) != sqlite.TypeNull {
					v := st.ColumnFloat(1)
					b.USD = &v
				}
				if st.ColumnType(2) != sqlite.TypeNull {
					v := st.ColumnInt64(2)
					b.Tokens = &v
				}
				if st.ColumnType(3) != sqlite.TypeNull {
					v := st.ColumnInt64(3)
					b.Runs = &v
				}
				out = append(out, b)
				return nil
			}})
	})
	return out, err
}

// AgentStats is Stats for one agent's runs.
func (db *DB) AgentStats(ctx context.Context, k AgentKey, since time.Time) (RunStats, error) {
	var st RunStats
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+statsColumns(conn)+` FROM runs WHERE workflow = ? AND tag = ? AND agent = ? AND started_at >= ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name, since.UnixMilli()}, ResultFunc: func(stmt row) error {
				st = scanStats(stmt, 0)
				return nil
			}})
	})
	return st, err
}

// orNull is a pointer's value for a query argument, nil for NULL.
func orNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
