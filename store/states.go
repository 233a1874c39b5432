package store

import (
	"context"
	"strings"

	"github.com/agent-worker/agent-worker/host/contract"
)

// MoveAgentState changes an agent's state to `to` only if it is in one of
// `from`, in one transaction, and reports whether it did. It is how two
// writers that race stay correct: the scheduler ends a run with
// running → idle, so a pause, a stop or a budget stop that landed during
// the run is never overwritten. A move to running also needs the agent's
// workflow to be running, so a workflow's pause holds every run that has
// not started by then. A missing agent is not found.
func (db *DB) MoveAgentState(ctx context.Context, k AgentKey, from []contract.AgentState, to contract.AgentState, errMsg string) (bool, error) {
	if !to.Valid() {
		return false, contract.Errorf(contract.CodeInvalid, "agent %q: unknown state %q", k, to)
	}
	moved := false
	err := db.write(ctx, func(conn querier) (err error) {
		moved, err = db.moveAgentState(conn, k, from, to, errMsg)
		return err
	})
	return moved, err
}

// moveAgentState is MoveAgentState in the caller's transaction.
func (db *DB) moveAgentState(conn querier, k AgentKey, from []contract.AgentState, to contract.AgentState, errMsg string) (bool, error) {
	if _, err := getAgent(conn, k); err != nil {
		return false, err
	}
	// The member that holds a running agent, so that its take-back
	// frees the agent even when no run of it is recorded as running.
	holder := ""
	if to == contract.AgentRunning {
		holder = db.daemon
	}
	args := []any{to, errMsg, db.nowMs(), holder, k.Workflow, k.Tag, k.Name}
	for _, s := range from {
		args = append(args, s)
	}
	guard := ""
	if to == contract.AgentRunning {
		// A run starts only in a running workflow: a pause of the
		// workflow that commits first holds it, however late the
		// scheduler read the workflow's state.
		guard = ` AND EXISTS (SELECT 1 FROM workflows w WHERE w.name = agents.workflow AND w.tag = agents.tag AND w.state = 'running')`
	}
	if db.Cluster() && to == contract.AgentIdle && len(from) == 1 && from[0] == contract.AgentRunning {
		// The end of a run: in a cluster, a member that was presumed
		// dead and ends a run late must not set idle an agent that
		// runs again on another member.
		guard = ` AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.workflow = agents.workflow AND runs.tag = agents.tag
			AND runs.agent = agents.name AND runs.state = 'running')`
	}
	err := conn.execute(`UPDATE agents SET state = ?, error = ?, updated_at = ?, daemon = ?
		WHERE workflow = ? AND tag = ? AND name = ? AND state IN (`+placeholders(len(from))+`)`+guard,
		&execOptions{Args: args})
	return err == nil && conn.changes() > 0, err
}

// MoveWorkflowState changes a workflow's state to `to` only if it is in
// one of `from`, in one transaction, and reports whether it did (pause
// and resume of a workflow:tag). A missing workflow is not found.
func (db *DB) MoveWorkflowState(ctx context.Context, name, tag string, from []contract.WorkflowState, to contract.WorkflowState, errMsg string) (bool, error) {
	if !to.Valid() {
		return false, contract.Errorf(contract.CodeInvalid, "workflow %q: unknown state %q", workflowID(name, tag), to)
	}
	moved := false
	err := db.write(ctx, func(conn querier) error {
		if _, err := getWorkflow(conn, name, tag); err != nil {
			return err
		}
		args := []any{to, errMsg, db.nowMs(), name, tag}
		for _, s := range from {
			args = append(args, s)
		}
		// Running again starts a new loop-guard count (see countAgentStreak).
		err := conn.execute(`UPDATE workflows SET state = ?1, error = ?2, updated_at = ?3,
			agent_streak = CASE WHEN ?1 = 'running' THEN 0 ELSE agent_streak END
			WHERE name = ?4 AND tag = ?5 AND state IN (`+placeholders(len(from))+`)`,
			&execOptions{Args: args})
		moved = err == nil && conn.changes() > 0
		return err
	})
	return moved, err
}

// placeholders returns "?, ?, …" for n arguments (NULL for none, which
// matches nothing).
func placeholders(n int) string {
	if n == 0 {
		return "NULL"
	}
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
