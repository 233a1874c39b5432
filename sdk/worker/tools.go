package worker

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools lists every tool the daemon offers this run's agent, with its
// description and input schema, so a backend that drives a model's tool
// calls itself (rather than handing the daemon to a CLI) can offer them;
// Call then calls one by name.
func (c *Client) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list daemon tools: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}
