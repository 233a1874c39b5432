package api

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Doctor is GET /doctor. A daemon older than the endpoint answers
// CodeNotFound.
func (c *Client) Doctor(ctx context.Context) (contract.Doctor, error) {
	var d contract.Doctor
	return d, c.do(ctx, http.MethodGet, "/doctor", nil, &d)
}
