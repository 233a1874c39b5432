package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// gateTimeout bounds one question to the gate; a daemon that does not
// answer within it refuses the call.
const gateTimeout = 30 * time.Second

// Gate asks the daemon's gate whether the run's agent may make a tool
// call now (issue 43: the phase of its effort decides). Plugins ask it
// before each tool they run themselves (a shell command, a file write);
// the daemon's own MCP tools are gated inside the daemon.
type Gate struct {
	url    string
	client *http.Client
}

// NewGate is the gate of the daemon the request names: its MCP URL plus
// tools.GatePath, asked with the run's token (daemon.Headers).
func NewGate(daemon backend.MCPServer) *Gate {
	if daemon.URL == "" {
		return &Gate{}
	}
	return &Gate{url: strings.TrimSuffix(daemon.URL, "/") + tools.GatePath, client: HeaderClient(daemon.Headers)}
}

// Gate asks the daemon's gate about call; it never fails, it decides. A
// daemon that cannot be asked (unreachable, an error, an answer it cannot
// read) refuses the call, and the reason says so: a daemon run fails
// closed. A run without a daemon (a plugin's own tests) is not gated.
func (g *Gate) Gate(ctx context.Context, call tools.GateCall) tools.GateDecision {
	if g == nil || g.url == "" {
		return tools.GateDecision{Allowed: true}
	}
	d, err := g.ask(ctx, call)
	if err != nil {
		return tools.GateDecision{Reason: fmt.Sprintf("not run: the daemon's gate could not be asked whether %s is allowed now (%v), and a call it has not allowed is refused; try again shortly", call.Tool, err)}
	}
	return d
}

func (g *Gate) ask(ctx context.Context, call tools.GateCall) (tools.GateDecision, error) {
	var d tools.GateDecision
	body, err := json.Marshal(call)
	if err != nil {
		return d, err
	}
	ctx, cancel := context.WithTimeout(ctx, gateTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return d, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return d, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return d, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message, Error string }
		_ = json.Unmarshal(b, &e)
		msg := e.Message
		if msg == "" {
			msg = e.Error
		}
		return d, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("read its answer: %w", err)
	}
	if !d.Allowed && d.Reason == "" {
		d.Reason = "not allowed by the phase of your effort"
	}
	return d, nil
}

// Gate asks the daemon's gate about call with the session's daemon
// address and token (see Gate.Gate).
func (c *Client) Gate(ctx context.Context, call tools.GateCall) tools.GateDecision {
	return c.gate.Gate(ctx, call)
}
