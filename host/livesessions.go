package host

import (
	"context"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/efforts"
	"github.com/agent-worker/agent-worker/host/gate"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// sessionEfforts gives a live Claude Code session's hooks (host/team) the
// same gate and efforts as the daemon's runs (invariant 17): a session's
// tool call is watched as one run event, and its directives come from the
// same once-per-effort record.
type sessionEfforts struct {
	gate    *gate.Gate
	efforts *efforts.Service
}

var _ team.SessionEfforts = sessionEfforts{}

// ToolUsed feeds the call to the gate as its run's tool result: Claude
// Code's PostToolUse comes only for a call that succeeded, and carries no
// exit status for Bash, so a shell call proves nothing, as for daemon runs.
func (s sessionEfforts) ToolUsed(ctx context.Context, k store.AgentKey, runID, cwd string, call backend.ToolCall) {
	s.gate.Watch(k, runID, cwd)(ctx, backend.Event{Kind: backend.EventToolResult, Tool: &call})
	s.gate.Ended(runID)
}

func (s sessionEfforts) Directives(ctx context.Context, k store.AgentKey) ([]api.SessionDirective, error) {
	ds, err := s.efforts.Directives(ctx, k)
	out := make([]api.SessionDirective, 0, len(ds))
	for _, d := range ds {
		out = append(out, api.SessionDirective{Path: d.Path, Content: d.Content})
	}
	return out, err
}

func (sessionEfforts) LastLogEntry(e store.Effort) string { return efforts.LastLogEntry(e) }
