package claude

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/agent-worker/agent-worker/internal/claudehook"
	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// GateHookArg is the first argument that makes the plugin binary answer
// one of Claude Code's PreToolUse hooks instead of serving as a plugin:
// `agent-worker-backend-claude gate-hook MCPCONFIG` (see GateHook).
const GateHookArg = gatehook.Arg

// hookOutput is Claude Code's documented PreToolUse answer that denies a
// call, marked as the daemon's (gatehook.Answer).
type hookOutput = gatehook.Answer

// GateHook answers one PreToolUse hook: it asks the daemon's gate
// (gatehook.Decide, with the daemon's address and the run's token read
// from the MCP config at args[0]) whether the call on stdin may run, and
// prints a deny decision with the phase's reason when it may not, nothing
// when it may (Claude Code's own permissions then apply, unchanged). It
// fails closed. The daemon's own MCP tools are not asked here: the daemon
// gates them itself. The exit status is 0 whenever an answer was printed,
// since Claude Code reads the JSON only then.
func GateHook(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) int {
	reason := gatehook.Decide(ctx, args, stdin, os.Getenv, gateCalls)
	if reason == "" {
		return 0
	}
	return gatehook.Deny(stdout, reason, true)
}

// gateCalls is the call in the daemon's terms (claudehook.Calls, which a
// live session's PreToolUse hook uses too); none for the daemon's own
// tools, which it gates itself.
func gateCalls(in gatehook.Input) []tools.GateCall { return claudehook.Calls(in, daemonServer) }

// gateRefusal is the reason of a gate hook's deny printed on a stream's
// hook_response line; ok is false for any other hook's output.
func gateRefusal(stdout string) (reason string, ok bool) {
	var out hookOutput
	if json.Unmarshal([]byte(strings.TrimSpace(stdout)), &out) != nil || !out.Mark || out.Specific.Decision != "deny" {
		return "", false
	}
	return out.Specific.Reason, true
}
