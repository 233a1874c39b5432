package backendtest

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// errNoWorktrees is the fake's answer to the worktree tools that act: its
// team has no git workspace, as a workflow without workspace: has none.
var errNoWorktrees = errors.New("@test:main has no git workspace: add workspace: {git: worktree} to its file to give each agent a worktree")

// addWorktreeTools registers the fakes of the worktree tools: the fake
// team has no git workspace, so every one fails
// as the daemon's do for such a team.
func (d *Daemon) addWorktreeTools(srv *mcp.Server, _ string) {
	tool(d, srv, tools.WorktreeStatus, func(tools.WorktreeStatusArgs) (tools.WorktreesResult, string, error) {
		return tools.WorktreesResult{}, "", errNoWorktrees
	})
	tool(d, srv, tools.WorktreeIntegrate, func(tools.WorktreeIntegrateArgs) (tools.IntegrateResult, string, error) {
		return tools.IntegrateResult{}, "", errNoWorktrees
	})
	tool(d, srv, tools.WorktreeDiscard, func(tools.WorktreeDiscardArgs) (tools.DiscardResult, string, error) {
		return tools.DiscardResult{}, "", errNoWorktrees
	})
	tool(d, srv, tools.WorktreeQueue, func(tools.WorktreeQueueArgs) (tools.QueueResult, string, error) {
		return tools.QueueResult{}, "", errNoWorktrees
	})
}
