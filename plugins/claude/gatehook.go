package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// GateHookArg is the first argument that makes the plugin binary answer
// one of Claude Code's PreToolUse hooks instead of serving as a plugin:
// `agent-worker-backend-claude gate-hook MCPCONFIG` (see GateHook).
const GateHookArg = "gate-hook"

// hookTimeoutSeconds is the timeout the run's settings give the hook; the
// hook gives up on the daemon well before (hookAskTimeout), since a hook
// that Claude Code times out does not block the call.
const hookTimeoutSeconds = 60

// hookAskTimeout bounds the hook's question to the daemon: a daemon that
// has not answered by then refuses the call.
const hookAskTimeout = 40 * time.Second

// gateMark is the key the hook adds to its answer so that the stream
// tells the daemon's refusals apart from those of the user's own hooks.
const gateMark = "agent_worker_gate"

// maxHookInput bounds what the hook reads from Claude Code: a tool's
// input, which holds a file's whole content for Write.
const maxHookInput = 64 << 20

// settings is the --settings file of a run whose daemon gates its tool
// calls: every tool, before it runs, asks hookCommand.
func settings(hookCommand string) ([]byte, error) {
	hook := map[string]any{"type": "command", "command": hookCommand, "timeout": hookTimeoutSeconds}
	return json.MarshalIndent(map[string]any{
		"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{hook}}},
		},
	}, "", "  ")
}

// hookCommand is the shell command Claude Code runs for the gate hook:
// the plugin binary exe with the run's MCP config, where the daemon's
// address and the run's token already are (no other copy of the token).
func hookCommand(exe, mcpConfig string) string {
	return shellQuote(exe) + " " + GateHookArg + " " + shellQuote(mcpConfig)
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookInput is the part of Claude Code's PreToolUse input the gate reads.
type hookInput struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	Cwd       string          `json:"cwd"`
}

// hookOutput is Claude Code's documented PreToolUse answer that denies a
// call; the reason is what the model reads as the tool's result.
type hookOutput struct {
	Gate     bool `json:"agent_worker_gate"`
	Specific struct {
		Event    string `json:"hookEventName"`
		Decision string `json:"permissionDecision"`
		Reason   string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// GateHook answers one PreToolUse hook: it reads the hook's JSON from
// stdin, asks the daemon's gate (POST <mcp url>/gate with the run's token,
// both read from the MCP config at args[0]) whether the call may run, and
// prints a deny decision with the phase's reason when it may not, nothing
// when it may (Claude Code's own permissions then apply, unchanged). It
// fails closed: input it cannot read, a config without the daemon, a
// daemon that cannot be asked all deny, saying why. The daemon's own MCP
// tools are not asked here: the daemon gates them itself. The exit status
// is 0 whenever an answer was printed, since Claude Code reads the JSON
// only then.
func GateHook(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) int {
	reason := gateHook(ctx, args, stdin)
	if reason == "" {
		return 0
	}
	var out hookOutput
	out.Gate = true
	out.Specific.Event = "PreToolUse"
	out.Specific.Decision = "deny"
	out.Specific.Reason = reason
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		// Exit status 2 blocks the call too, with stderr as the reason.
		fmt.Fprintln(os.Stderr, reason)
		return 2
	}
	return 0
}

// gateHook is the reason to deny the call on stdin, "" to let it run.
func gateHook(ctx context.Context, args []string, stdin io.Reader) string {
	refuse := func(format string, a ...any) string {
		return "not run: " + fmt.Sprintf(format, a...) + ", and a call the daemon has not allowed is refused; try again shortly"
	}
	if len(args) != 1 {
		return refuse("the gate hook was started with %d arguments, not the run's MCP config", len(args))
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return refuse("the gate hook could not read the call (%v)", err)
	}
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil || in.ToolName == "" {
		return refuse("the gate hook could not read the call (%.80q)", raw)
	}
	if strings.HasPrefix(in.ToolName, "mcp__"+daemonServer+"__") {
		return "" // the daemon decides its own tools when they are called
	}
	daemon, err := daemonOf(args[0])
	if err != nil {
		return refuse("the daemon's gate could not be asked whether %s is allowed now (%v)", in.ToolName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, hookAskTimeout)
	defer cancel()
	d := worker.NewGate(daemon).Gate(ctx, gateCall(in))
	if d.Allowed {
		return ""
	}
	return d.Reason
}

// gateCall is the call in the daemon's terms: the tool as Claude Code
// names it, a shell command, a file's absolute path.
func gateCall(in hookInput) tools.GateCall {
	var a struct {
		Command      string `json:"command"`
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
	}
	_ = json.Unmarshal(in.ToolInput, &a)
	call := tools.GateCall{Tool: in.ToolName}
	if in.ToolName == "Bash" { // Claude Code's shell
		call.Command = a.Command
	}
	p := a.FilePath
	for _, q := range []string{a.NotebookPath, a.Path} {
		if p == "" {
			p = q
		}
	}
	if p != "" && !filepath.IsAbs(p) && in.Cwd != "" {
		p = filepath.Join(in.Cwd, p)
	}
	call.Path = p
	return call
}

// daemonOf reads the daemon's entry of an MCP config this backend wrote.
func daemonOf(path string) (backend.MCPServer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return backend.MCPServer{}, err
	}
	var c struct {
		Servers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return backend.MCPServer{}, fmt.Errorf("%s: %w", path, err)
	}
	s, ok := c.Servers[daemonServer]
	if !ok || s.URL == "" {
		return backend.MCPServer{}, fmt.Errorf("%s names no daemon", path)
	}
	return backend.MCPServer{Name: daemonServer, URL: s.URL, Headers: s.Headers}, nil
}

// gateRefusal is the reason of a gate hook's deny printed on a stream's
// hook_response line; ok is false for any other hook's output.
func gateRefusal(stdout string) (reason string, ok bool) {
	var out hookOutput
	if json.Unmarshal([]byte(strings.TrimSpace(stdout)), &out) != nil || !out.Gate || out.Specific.Decision != "deny" {
		return "", false
	}
	return out.Specific.Reason, true
}
