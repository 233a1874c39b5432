package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// GateHookArg is the first argument that makes the plugin binary answer
// one of Codex's PreToolUse hooks instead of serving as a plugin:
// `agent-worker-backend-codex gate-hook GATEFILE` (see GateHook).
const GateHookArg = gatehook.Arg

// gateFileName is the run's gate file in its work dir: the daemon's
// address, and the variable (tokenEnv) that holds the run's token, which
// Codex passes on to its hooks; the token itself is in no file.
const gateFileName = "gate.json"

// GateHook answers one of Codex's PreToolUse hooks: it asks the daemon's
// gate (gatehook.Decide: the daemon's address from the gate file at
// args[0], the token from $AGENT_WORKER_MCP_TOKEN) whether the call on
// stdin may run, and prints Codex's deny decision with the phase's reason
// when it may not, nothing when it may. It fails closed. Codex's JSON
// stream does not mention a blocked call, so the hook also notes the
// refusal beside the gate file, where the plugin reads it as the run's
// gate event.
func GateHook(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) int {
	reason := gatehook.Decide(ctx, args, stdin, os.Getenv, gateCalls)
	if reason == "" {
		return 0
	}
	if len(args) == 1 {
		if err := gatehook.Note(args[0], reason); err != nil {
			fmt.Fprintln(os.Stderr, "agent-worker gate hook: the refusal is not in the transcript:", err)
		}
	}
	// Codex rejects an answer with a key it does not know, and then runs
	// the call: no mark.
	return gatehook.Deny(stdout, reason, false)
}

// gateCalls maps Codex's hook input to the daemon's terms. Codex names its
// shell Bash and gives the model's command line as it was asked for (not
// the `bash -lc` it runs), which the gate sees as a call of shell, the
// name its results have in the transcript; an argv array (older Codex
// tools) is read back into that line. apply_patch is one call per file
// the patch writes, by absolute path. MCP tools keep Codex's name
// (mcp__<server>__<tool>), but the daemon's own are not asked here: the
// daemon gates them when they are called.
func gateCalls(in gatehook.Input) []tools.GateCall {
	switch {
	case strings.HasPrefix(in.ToolName, "mcp__agent_worker__"):
		return nil
	case in.ToolName == "Bash":
		command := shellCommand(in.ToolInput)
		calls := []tools.GateCall{{Tool: "shell", Command: command}}
		if w := strings.Fields(command); len(w) > 0 && (w[0] == "apply_patch" || w[0] == "applypatch") {
			// Codex applies a patch given to the shell itself.
			calls = append(calls, patchCalls(command, in.Cwd)...)
		}
		return calls
	case in.ToolName == "apply_patch":
		if calls := patchCalls(shellCommand(in.ToolInput), in.Cwd); len(calls) > 0 {
			return calls
		}
	}
	return []tools.GateCall{{Tool: in.ToolName, Path: gatehook.Abs(gatehook.Field(in.ToolInput, "path", "file_path"), in.Cwd)}}
}

// shellCommand is a Bash or apply_patch input's command: a string, or an
// argv array whose `bash -lc SCRIPT` form is the script.
func shellCommand(input json.RawMessage) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) != nil || len(argv) == 0 {
		return ""
	}
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = gatehook.ShellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// patchMarks start the lines of a patch that name a file it writes.
var patchMarks = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}

// patchCalls are the calls of apply_patch the gate decides for patch: one
// per file it adds, updates, deletes or moves to.
func patchCalls(patch, cwd string) []tools.GateCall {
	var calls []tools.GateCall
	for line := range strings.Lines(patch) {
		for _, m := range patchMarks {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), m); ok && strings.TrimSpace(p) != "" {
				calls = append(calls, tools.GateCall{Tool: "apply_patch", Path: gatehook.Abs(strings.TrimSpace(p), cwd)})
			}
		}
	}
	return calls
}
