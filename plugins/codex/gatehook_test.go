package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/plugins/internal/gatehook"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// TestMain lets the test binary be the gate hook a stand-in codex runs,
// as the plugin binary is for the real one.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GateHookArg {
		os.Exit(GateHook(context.Background(), os.Args[2:], os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// gatedDaemon is a daemon whose gate refuses writes and git commits, and
// records what it was asked.
func gatedDaemon(t *testing.T) (*backendtest.Daemon, func() []tools.GateCall) {
	d := backendtest.NewDaemon(t)
	var mu sync.Mutex
	var asked []tools.GateCall
	d.Gate = func(agent string, call tools.GateCall) tools.GateDecision {
		mu.Lock()
		asked = append(asked, call)
		mu.Unlock()
		if call.Tool == "apply_patch" || strings.HasPrefix(call.Command, "git commit") {
			return tools.GateDecision{Reason: "phase plan of skill implement does not allow " + call.Tool}
		}
		return tools.GateDecision{Allowed: true}
	}
	return d, func() []tools.GateCall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// A run's CODEX_HOME gets a hooks.json whose one PreToolUse hook, on every
// tool, is this plugin's binary with the run's gate file; that file names
// the daemon and the variable holding the token, never the token.
func TestRunWritesGateHook(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice say hi")
	b := newBackend(t)
	b.exe = "/opt/aw plugins/agent-worker-backend-codex"
	req := withCLI(d.Request("alice"), standIn(t, sample("tool_ok.jsonl", "0")))
	if _, err := run(t, b, req); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(req.WorkDir, "codex-home", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	gateFile := filepath.Join(req.WorkDir, "gate.json")
	want, _ := gatehook.HooksFile("'/opt/aw plugins/agent-worker-backend-codex' gate-hook " + gateFile)
	if diff := cmp.Diff(string(want), string(raw)); diff != "" {
		t.Errorf("hooks.json (-want +got):\n%s", diff)
	}
	gate, err := os.ReadFile(gateFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(req.Daemon.Headers["Authorization"], "Bearer ")
	if bytes.Contains(gate, []byte(token)) || !bytes.Contains(gate, []byte(d.URL())) || !bytes.Contains(gate, []byte(tokenEnv)) {
		t.Errorf("gate.json = %s; want the daemon's URL and %s, not the token", gate, tokenEnv)
	}
}

// Codex's hook input in the daemon's terms: the model's command line as
// shell (a `bash -lc` argv read back), apply_patch as the files it
// writes, a patch given to the shell too, MCP tools by name, the
// daemon's own tools not at all.
func TestGateCalls(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Add File: main.go\n+package main\n*** Update File: /p/old.go\n*** Move to: new.go\n@@\n-a\n+b\n*** Delete File: gone.go\n*** End Patch"
	quoted, _ := json.Marshal(patch)
	tests := map[string]struct {
		in   string
		want []tools.GateCall
	}{
		"shell": {`{"tool_name":"Bash","tool_input":{"command":"echo hi > f.txt"},"cwd":"/p"}`,
			[]tools.GateCall{{Tool: "shell", Command: "echo hi > f.txt"}}},
		"argv": {`{"tool_name":"Bash","tool_input":{"command":["bash","-lc","git commit -m x"]},"cwd":"/p"}`,
			[]tools.GateCall{{Tool: "shell", Command: "git commit -m x"}}},
		"argv words": {`{"tool_name":"Bash","tool_input":{"command":["git","commit","-m","a b"]},"cwd":"/p"}`,
			[]tools.GateCall{{Tool: "shell", Command: "git commit -m 'a b'"}}},
		"apply_patch": {`{"tool_name":"apply_patch","tool_input":{"command":` + string(quoted) + `},"cwd":"/p"}`,
			[]tools.GateCall{{Tool: "apply_patch", Path: "/p/main.go"}, {Tool: "apply_patch", Path: "/p/old.go"},
				{Tool: "apply_patch", Path: "/p/new.go"}, {Tool: "apply_patch", Path: "/p/gone.go"}}},
		"patch in the shell": {`{"tool_name":"Bash","tool_input":{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch\nEOF"},"cwd":"/p"}`,
			[]tools.GateCall{{Tool: "shell", Command: "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch\nEOF"}, {Tool: "apply_patch", Path: "/p/a.go"}}},
		"mcp":    {`{"tool_name":"mcp__my_gh__create_issue","tool_input":{"title":"x"}}`, []tools.GateCall{{Tool: "mcp__my_gh__create_issue"}}},
		"daemon": {`{"tool_name":"mcp__agent_worker__channel_send","tool_input":{"message":"hi"}}`, nil},
	}
	for name, tc := range tests {
		var in gatehook.Input
		if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, gateCalls(in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// The hook's deny is exactly Codex's format (Codex runs the call when an
// answer has any other key), and the refusal is noted for the plugin; an
// allowed call prints nothing and notes nothing; the token comes from the
// environment Codex passes on.
func TestGateHookAnswersCodex(t *testing.T) {
	d, asked := gatedDaemon(t)
	req := d.Request("alice")
	dir := t.TempDir()
	gateFile := filepath.Join(dir, gateFileName)
	body, _ := gatehook.GateFile(req.Daemon, tokenEnv)
	if err := os.WriteFile(gateFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tokenEnv, strings.TrimPrefix(req.Daemon.Headers["Authorization"], "Bearer "))
	var out bytes.Buffer
	code := GateHook(t.Context(), []string{gateFile}, strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: main.go\n+x\n*** End Patch"},"cwd":"/p"}`), &out)
	const want = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"phase plan of skill implement does not allow apply_patch"}}`
	if code != 0 || strings.TrimSpace(out.String()) != want {
		t.Errorf("exit %d, printed %s; want %s", code, out.String(), want)
	}
	out.Reset()
	if code := GateHook(t.Context(), []string{gateFile}, strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"go test ./..."},"cwd":"/p"}`), &out); code != 0 || out.Len() != 0 {
		t.Errorf("allowed: exit %d, printed %q; want nothing", code, out.String())
	}
	if got := gatehook.NewReader(gateFile).Next(); !slices.Equal(got, []string{"phase plan of skill implement does not allow apply_patch"}) {
		t.Errorf("noted refusals = %q", got)
	}
	if got := asked(); len(got) != 2 || got[0].Path != "/p/main.go" || got[1].Command != "go test ./..." {
		t.Errorf("the gate was asked %+v", got)
	}

	// Without the token in the environment, the call is refused.
	t.Setenv(tokenEnv, "")
	out.Reset()
	GateHook(t.Context(), []string{gateFile}, strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"ls"}}`), &out)
	if !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), tokenEnv) {
		t.Errorf("without the token: %s; want a deny naming %s", out.String(), tokenEnv)
	}
}

// A stand-in codex that runs the run's hook the way Codex does (the
// command of hooks.json, the call on stdin) and then prints what Codex
// printed for a blocked call: the refusal reaches the transcript as a gate
// event, before the agent's answer.
func TestRunReportsRefusals(t *testing.T) {
	t.Parallel()
	d, _ := gatedDaemon(t)
	d.Post("user", "@alice plan it")
	b := newBackend(t)
	b.exe = os.Args[0] // TestMain answers as the hook
	hook := `cmd=$(sed -n 's/.*"command": "\(.*\)",/\1/p' "$CODEX_HOME/hooks.json" | sed 's/\\"/"/g')
printf '%s\n' '{"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: main.go\n+x\n*** End Patch"},"cwd":"/p"}' | sh -c "$cmd" > "$CODEX_HOME/answer"
` + sample("gate_refused.jsonl", "0")
	req := withCLI(d.Request("alice"), standIn(t, hook))
	rec, err := run(t, b, req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := os.ReadFile(filepath.Join(req.WorkDir, "codex-home", "answer"))
	if !bytes.Contains(answer, []byte(`"permissionDecision":"deny"`)) {
		t.Fatalf("the hook answered %q, want a deny", answer)
	}
	want := []backend.Event{
		{Kind: backend.EventGate, Text: "phase plan of skill implement does not allow apply_patch"},
		{Kind: backend.EventText, Text: "I will plan first"},
	}
	if diff := cmp.Diff(want, rec.Of(backend.EventGate, backend.EventText)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
