package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Replay is the answer of POST /runs/{id}/replay.
type Replay = contract.Replay

// ReplayRun is POST /runs/{id}/replay: the run again in a scratch team,
// answered when the replay has ended (it takes as long as a run).
func (c *Client) ReplayRun(ctx context.Context, id string) (Replay, error) {
	var out Replay
	return out, c.doWith(ctx, c.stream(), http.MethodPost, "/runs/"+url.PathEscape(id)+"/replay", nil, &out)
}
