package api

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/contract"
)

// The fork's wire types, named here for the CLI, the daemon and the
// workflow manager (which does not import host/contract).
type (
	ForkWorkflow = contract.ForkWorkflow
	Fork         = contract.Fork
)

// Fork is POST /workflows/{name}/{tag}/fork: start a new tag of from's
// workflow from the team's state at a channel seq.
func (c *Client) Fork(ctx context.Context, from Target, req ForkWorkflow) (Fork, error) {
	var out Fork
	return out, c.do(ctx, http.MethodPost, workflowPath(from)+"/fork", req, &out)
}
