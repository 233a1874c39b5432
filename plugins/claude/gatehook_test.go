package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// hookAnswer runs the gate hook on one PreToolUse input and returns what
// it printed, decoded ("" for nothing), and its exit status.
func hookAnswer(t *testing.T, mcpConfig string, input string) (hookOutput, string, int) {
	t.Helper()
	var out bytes.Buffer
	code := GateHook(t.Context(), []string{mcpConfig}, strings.NewReader(input), &out)
	var o hookOutput
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("the hook printed %q, not JSON: %v", out.String(), err)
		}
	}
	return o, out.String(), code
}

// The hook asks the daemon's gate with the run's token, as the token's
// agent: a refusal is Claude Code's deny decision with the phase's
// reason; an allowed call prints nothing, so Claude Code's own
// permissions still apply; the daemon's own tools are not asked.
func TestGateHookAsksTheDaemon(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	var mu sync.Mutex
	var asked []tools.GateCall
	d.Gate = func(agent string, call tools.GateCall) tools.GateDecision {
		mu.Lock()
		asked = append(asked, call)
		mu.Unlock()
		if agent != "alice" {
			return tools.GateDecision{Reason: "wrong agent " + agent}
		}
		if call.Tool == "Write" {
			return tools.GateDecision{Reason: "phase plan of skill implement does not allow Write"}
		}
		return tools.GateDecision{Allowed: true}
	}
	req := d.Request("alice")
	body, err := mcpConfig(req, config{})
	if err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(req.WorkDir, "mcp.json")
	if err := os.WriteFile(mcp, body, 0o600); err != nil {
		t.Fatal(err)
	}

	o, _, code := hookAnswer(t, mcp, `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"main.go","content":"x"},"cwd":"/work/p"}`)
	if code != 0 || !o.Mark || o.Specific.Event != "PreToolUse" || o.Specific.Decision != "deny" ||
		o.Specific.Reason != "phase plan of skill implement does not allow Write" {
		t.Errorf("Write: exit %d, answer %+v; want a marked deny with the phase's reason", code, o)
	}
	if _, out, code := hookAnswer(t, mcp, `{"tool_name":"Bash","tool_input":{"command":"go test ./..."},"cwd":"/work/p"}`); out != "" || code != 0 {
		t.Errorf("allowed Bash: exit %d, printed %q; want nothing", code, out)
	}
	if _, out, _ := hookAnswer(t, mcp, `{"tool_name":"mcp__agent-worker__channel_send","tool_input":{"message":"hi"}}`); out != "" {
		t.Errorf("the daemon's own tool: printed %q; want nothing", out)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []tools.GateCall{{Tool: "Write", Path: "/work/p/main.go"}, {Tool: "Bash", Command: "go test ./..."}}
	if !slices.Equal(asked, want) {
		t.Errorf("the gate was asked %+v, want %+v (relative paths resolved, the daemon's tools not asked)", asked, want)
	}
}

// The hook fails closed: a daemon that cannot be asked, a config without
// it, input it cannot read all deny, saying why.
func TestGateHookFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	down := filepath.Join(dir, "down.json")
	os.WriteFile(down, []byte(`{"mcpServers":{"agent-worker":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer x"}}}}`), 0o600)
	none := filepath.Join(dir, "none.json")
	os.WriteFile(none, []byte(`{"mcpServers":{}}`), 0o600)
	const write = `{"tool_name":"Write","tool_input":{"file_path":"/p/main.go"}}`
	for name, c := range map[string]struct{ config, input, want string }{
		"daemon down":   {down, write, "the daemon's gate could not be asked whether Write is allowed now"},
		"no daemon":     {none, write, "names no daemon"},
		"no config":     {filepath.Join(dir, "missing.json"), write, "the daemon's gate could not be asked"},
		"not JSON":      {down, "{", "could not read the call"},
		"no tool named": {down, `{"tool_input":{}}`, "could not read the call"},
	} {
		t.Run(name, func(t *testing.T) {
			o, out, code := hookAnswer(t, c.config, c.input)
			if code != 0 || o.Specific.Decision != "deny" || !strings.Contains(o.Specific.Reason, c.want) || !strings.Contains(o.Specific.Reason, "refused") {
				t.Errorf("exit %d, printed %q; want a deny saying %q", code, out, c.want)
			}
		})
	}
}

// A deny printed by the user's own hook is no refusal of the daemon's.
func TestGateRefusalOnlyOurs(t *testing.T) {
	t.Parallel()
	if _, ok := gateRefusal(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"mine"}}`); ok {
		t.Error("an unmarked deny was taken for the daemon's")
	}
	if r, ok := gateRefusal(`{"agent_worker_gate":true,"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"phase plan"}}` + "\n"); !ok || r != "phase plan" {
		t.Errorf("gateRefusal = %q, %v", r, ok)
	}
}

// A daemon run's settings hook every tool to this plugin's binary in
// gate-hook mode, with the run's MCP config; the file is the run's, not
// the project's.
func TestRunWritesGateSettings(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice please say hi")
	req := withFake(d.Request("alice"), "anthropic/send")
	b := New()
	b.exe = "/opt/aw plugins/agent-worker-backend-claude"
	ev, err := run(t, b, req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	_, args := report(t, ev)
	path := filepath.Join(req.WorkDir, "settings.json")
	if i := slices.Index(args, "--settings"); i < 0 || i+1 >= len(args) || args[i+1] != path || !slices.Contains(args, "--include-hook-events") {
		t.Errorf("args %q lack --settings %s --include-hook-events", args, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
			}
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	pre := s.Hooks["PreToolUse"]
	want := "'/opt/aw plugins/agent-worker-backend-claude' gate-hook " + filepath.Join(req.WorkDir, "mcp.json")
	if len(pre) != 1 || pre[0].Matcher != "*" || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Command != want || pre[0].Hooks[0].Timeout != gatehook.TimeoutSeconds {
		t.Errorf("settings = %s; want one PreToolUse hook on every tool running %q", raw, want)
	}
}
