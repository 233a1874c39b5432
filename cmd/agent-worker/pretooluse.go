package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/claudehook"
)

// mcpServerName is the daemon's name in the MCP config `mcp-config`
// prints; Claude Code calls its tools mcp__agent-worker__<tool>.
const mcpServerName = "agent-worker"

// maxToolInput bounds what PreToolUse reads from Claude Code: a tool's
// input holds a whole file's content for a Write.
const maxToolInput = 64 << 20

// preToolUse answers Claude Code's PreToolUse hook of a live session
// acting as agent: it asks the daemon's gate (POST /agents/{target}/gate,
// the same Decide as a daemon run's calls) about the call on stdin, mapped
// to the gate's terms as the claude backend maps a run's
// (internal/claudehook). A refusal prints Claude Code's deny decision with
// the phase's reason, which the model reads as the tool's result; an
// allowed call prints nothing. It fails open: with the daemon down, slow
// past timeout or answering an error, it says why on stderr and lets the
// call run, so a person's session never breaks on the daemon. Calls of
// the daemon's own MCP tools are not asked: the daemon gates them itself.
// An allowed call is not observed here, since it has not run yet: its
// evidence (a file written, a command's exit) is PostToolUse's to report,
// where the result is seen.
func (e *env) preToolUse(ctx context.Context, agent string, timeout time.Duration, stdin io.Reader) error {
	t, err := api.ParseAgentTarget(agent)
	if err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var in claudehook.Input
	if err := json.NewDecoder(io.LimitReader(stdin, maxToolInput)).Decode(&in); err != nil {
		return fmt.Errorf("read Claude's hook input: %w", err)
	}
	if in.ToolName == "" {
		return fmt.Errorf("the hook input names no tool")
	}
	calls := claudehook.Calls(in, mcpServerName)
	if len(calls) == 0 {
		return nil
	}
	c, err := e.connect(ctx, false)
	if err != nil {
		return err
	}
	c.HTTP.Timeout = timeout
	for _, call := range calls {
		d, err := c.SessionGate(ctx, t, api.SessionGateCall{SessionID: in.SessionID, GateCall: call})
		if err != nil {
			return err
		}
		if !d.Allowed {
			return json.NewEncoder(e.stdout).Encode(claudehook.NewDeny(d.Reason, false))
		}
	}
	return nil
}
