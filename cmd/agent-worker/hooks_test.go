package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
)

// userSettings is a settings file a user wrote: hooks of their own on two
// of the events install uses, and other settings around them.
const userSettings = `{
  "model": "opus",
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "gofmt -w \"$FILE\""}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}
    ]
  },
  "permissions": {"allow": ["Bash(ls)"]}
}
`

const testExe, testHome = "/opt/agent worker/agent-worker", "/home/u/.agent-worker"

func install(t *testing.T, path, agent string) string {
	t.Helper()
	s, err := loadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	_, kept, err := s.install(testExe, testHome, api.Target{Agent: agent, Workflow: "review", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	return kept
}

func uninstall(t *testing.T, path, agent string) int {
	t.Helper()
	s, err := loadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.uninstall(api.Target{Agent: agent, Workflow: "review", Tag: "main"}.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	return n
}

// decoded reads a JSON file as plain values, for comparisons that ignore
// layout.
func decoded(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return v
}

// ourCommands lists, per event, the agent-worker hook commands a file holds.
func ourCommands(t *testing.T, path string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	hooks, _ := decoded(t, path)["hooks"].(map[string]any)
	for event, groups := range hooks {
		for _, g := range groups.([]any) {
			for _, h := range g.(map[string]any)["hooks"].([]any) {
				if c, _ := h.(map[string]any)["command"].(string); ourHook.MatchString(c) {
					out[event] = append(out[event], c)
				}
			}
		}
	}
	return out
}

func TestHooksInstallKeepsTheUsersSettings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".claude", "settings.local.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(userSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	before := decoded(t, path)

	if kept := install(t, path, "me"); kept != "" {
		t.Errorf("kept a status line %q the user does not have", kept)
	}
	got := ourCommands(t, path)
	if len(got) != len(installedEvents) {
		t.Errorf("hooks installed for %d events, want %d: %v", len(got), len(installedEvents), got)
	}
	for _, event := range []string{"PreToolUse", "PreCompact", "SessionStart", "PostToolUse"} {
		if !slices.Contains(installedEvents, event) {
			t.Errorf("install leaves out %s", event)
		}
	}
	for _, event := range installedEvents {
		want := "'/opt/agent worker/agent-worker' hook " + event + " --agent me@review:main --home /home/u/.agent-worker"
		if diff := cmp.Diff([]string{want}, got[event]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", event, diff)
		}
	}
	after := decoded(t, path)
	for _, key := range []string{"model", "permissions"} {
		if !cmp.Equal(before[key], after[key]) {
			t.Errorf("%s changed: %v → %v", key, before[key], after[key])
		}
	}
	for _, event := range []string{"PostToolUse", "Stop", "PreToolUse"} {
		userGroups := before["hooks"].(map[string]any)[event].([]any)
		groups := after["hooks"].(map[string]any)[event].([]any)
		if !cmp.Equal(userGroups, groups[:len(userGroups)]) {
			t.Errorf("the user's %s hooks changed:\n%v\n→ %v", event, userGroups, groups)
		}
	}
	raw, _ := os.ReadFile(path)
	if i, j := bytes.Index(raw, []byte(`"model"`)), bytes.Index(raw, []byte(`"permissions"`)); i < 0 || j < i {
		t.Errorf("the keys' order changed:\n%s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the file's own 0600", fi.Mode().Perm())
	}

	install(t, path, "me")
	if again, _ := os.ReadFile(path); !bytes.Equal(raw, again) {
		t.Errorf("a second install changed the file:\n%s\n→\n%s", raw, again)
	}

	install(t, path, "other") // a directory is one agent: the new one replaces the old
	for event, cmds := range ourCommands(t, path) {
		if len(cmds) != 1 || !strings.Contains(cmds[0], "--agent other@review:main") {
			t.Errorf("after installing other, %s runs %v", event, cmds)
		}
	}

	if n := uninstall(t, path, "me"); n != 0 {
		t.Errorf("uninstall of an agent whose hooks were replaced removed %d", n)
	}
	if n := uninstall(t, path, "other"); n != len(installedEvents)+1 {
		t.Errorf("uninstall removed %d entries, want %d hooks and the status line", n, len(installedEvents))
	}
	if diff := cmp.Diff(before, decoded(t, path)); diff != "" {
		t.Errorf("after uninstall the settings differ from the user's (-before +after):\n%s", diff)
	}
}

// Install into a directory without settings creates them; uninstall then
// leaves nothing behind.
func TestHooksInstallIntoEmptyDir(t *testing.T) {
	t.Parallel()
	path := settingsPath(t.TempDir())
	install(t, path, "me")
	if got := ourCommands(t, path); len(got) != len(installedEvents) {
		t.Fatalf("installed %v", got)
	}
	for _, event := range []string{"PreToolUse", "PostToolUse"} {
		if g := decoded(t, path)["hooks"].(map[string]any)[event].([]any)[0].(map[string]any); g["matcher"] != "*" {
			t.Errorf("%s group = %v, want matcher * (every tool)", event, g)
		}
	}
	want := map[string]any{"type": "command", "padding": float64(0),
		"command": "'/opt/agent worker/agent-worker' statusline --agent me@review:main --home /home/u/.agent-worker"}
	if diff := cmp.Diff(want, decoded(t, path)["statusLine"]); diff != "" {
		t.Errorf("statusLine (-want +got):\n%s", diff)
	}
	uninstall(t, path, "me")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("uninstall left the settings it created: %v", err)
	}
}

// The user's own status line stays through install and uninstall, and
// install says so; ours replaces another agent's.
func TestHooksInstallKeepsTheUsersStatusLine(t *testing.T) {
	t.Parallel()
	path := settingsPath(t.TempDir())
	os.MkdirAll(filepath.Dir(path), 0o755)
	theirs := `{"statusLine": {"type": "command", "command": "~/bin/my-line.sh"}, "model": "opus"}`
	os.WriteFile(path, []byte(theirs), 0o644)
	before := decoded(t, path)
	if kept := install(t, path, "me"); kept != "~/bin/my-line.sh" {
		t.Errorf("kept = %q, want the user's command", kept)
	}
	if diff := cmp.Diff(before["statusLine"], decoded(t, path)["statusLine"]); diff != "" {
		t.Errorf("install changed the user's status line (-before +after):\n%s", diff)
	}
	if n := uninstall(t, path, "me"); n != len(installedEvents) {
		t.Errorf("uninstall removed %d, want the %d hooks only", n, len(installedEvents))
	}
	if diff := cmp.Diff(before, decoded(t, path)); diff != "" {
		t.Errorf("after uninstall (-before +after):\n%s", diff)
	}

	other := settingsPath(t.TempDir())
	install(t, other, "me")
	install(t, other, "you")
	if c, _ := decoded(t, other)["statusLine"].(map[string]any)["command"].(string); !strings.Contains(c, "--agent you@review:main") {
		t.Errorf("after installing you over me, the status line runs %q", c)
	}
	if n := uninstall(t, other, "me"); n != 0 {
		t.Errorf("uninstall of me removed %d of you's entries", n)
	}
}

// A hook of the user's that shares a group with ours stays when ours goes.
func TestHooksUninstallLeavesASharedGroup(t *testing.T) {
	t.Parallel()
	path := settingsPath(t.TempDir())
	ours := hookCommand("/bin/agent-worker", "/h", "Stop", api.Target{Agent: "me", Workflow: "review", Tag: "main"})
	os.MkdirAll(filepath.Dir(path), 0o755)
	body := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}, {"type": "command", "command": ` + strconv.Quote(ours) + `}]}]}}`
	os.WriteFile(path, []byte(body), 0o644)
	if n := uninstall(t, path, "me"); n != 1 {
		t.Fatalf("removed %d", n)
	}
	want := map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "say done"}}}}}}
	if diff := cmp.Diff(want, decoded(t, path)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A settings file Claude Code could not read is refused, never rewritten.
func TestHooksRefuseABrokenSettingsFile(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":         `{"hooks": `,
		"not an object":    `[1, 2]`,
		"hooks not object": `{"hooks": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := settingsPath(t.TempDir())
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(body), 0o644)
			if _, err := loadSettings(path); err == nil {
				t.Errorf("loadSettings accepted %s", body)
			}
			if b, _ := os.ReadFile(path); string(b) != body {
				t.Errorf("the file changed: %s", b)
			}
		})
	}
}

func TestHookOutput(t *testing.T) {
	t.Parallel()
	msg := func(seq int64, from, content, to string) api.Message {
		return api.Message{Seq: seq, From: from, Content: content, To: to}
	}
	waiting := api.HookDelivery{Agent: "me@review", Workflow: "review", Tag: "main",
		Messages: []api.Message{msg(7, "alice", "@me please look", ""), msg(9, "bob", "psst", "me")}, Omitted: 2}
	start := waiting
	start.System = "You review Go code."
	start.Members = []api.Member{{Name: "alice", State: api.AgentIdle}, {Name: "me", State: api.AgentIdle}, {Name: "bob", State: api.AgentRunning}}
	block := waiting
	block.Block = true
	for name, tc := range map[string]struct {
		event string
		d     api.HookDelivery
		want  map[string]any // nil: no output at all
		marks []string       // in the context or reason
	}{
		"session start": {api.HookSessionStart, start,
			map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "SessionStart"}},
			[]string{"you are me@review", "team @review", "alice (idle), bob (running)", "Your role: You review Go code.",
				"(2 older message(s) not shown", "[#7 alice] @me please look", "[#9 bob → you (direct)] psst"}},
		"session start, nothing unread": {api.HookSessionStart, api.HookDelivery{Agent: "me", Workflow: "global", Tag: "main"},
			map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "SessionStart"}}, []string{"No unread messages."}},
		"prompt with news": {api.HookUserPromptSubmit, waiting,
			map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "UserPromptSubmit"}}, []string{"[#7 alice]", "[#9 bob"}},
		"tool with news": {api.HookPostToolUse, waiting,
			map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PostToolUse"}}, []string{"[#9 bob"}},
		"prompt, nothing new": {api.HookUserPromptSubmit, api.HookDelivery{Agent: "me"}, nil, nil},
		"stop while messages wait": {api.HookStop, block, map[string]any{"decision": "block"},
			[]string{"before you stop", "[#7 alice] @me please look"}},
		"stop, nothing waits": {api.HookStop, api.HookDelivery{Agent: "me"}, nil, nil},
		"session end":         {api.HookSessionEnd, waiting, nil, nil},
	} {
		t.Run(name, func(t *testing.T) {
			out := hookOutput(tc.event, tc.d)
			if tc.want == nil {
				if out != nil {
					t.Fatalf("output %s, want none", out)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			var text string
			if hso, ok := got["hookSpecificOutput"].(map[string]any); ok {
				text, _ = hso["additionalContext"].(string)
				delete(hso, "additionalContext")
			} else {
				text, _ = got["reason"].(string)
				delete(got, "reason")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, m := range tc.marks {
				if !strings.Contains(text, m) {
					t.Errorf("the text lacks %q:\n%s", m, text)
				}
			}
		})
	}
}

// Many long messages stay within what Claude keeps of a hook's output: the
// newest are shown, the rest counted.
func TestHookOutputIsBounded(t *testing.T) {
	t.Parallel()
	d := api.HookDelivery{Agent: "me", Omitted: 5}
	for i := range 20 {
		d.Messages = append(d.Messages, api.Message{Seq: int64(100 + i), From: "alice", Content: strings.Repeat("x", 3000)})
	}
	var got struct {
		HookSpecificOutput struct{ AdditionalContext string }
	}
	if err := json.Unmarshal(hookOutput(api.HookPostToolUse, d), &got); err != nil {
		t.Fatal(err)
	}
	text := got.HookSpecificOutput.AdditionalContext
	if len(text) > 10_000 {
		t.Errorf("the context is %d characters", len(text))
	}
	shown := strings.Count(text, "[#")
	if !strings.Contains(text, "[#119 alice]") || !strings.Contains(text, "("+strconv.Itoa(25-shown)+" older message(s) not shown") {
		t.Errorf("%d shown; the newest or the count of the others is missing:\n%.300s", shown, text)
	}
}

// With no daemon, or one that does not answer, the hook gives up within
// its timeout; the command then prints nothing and exits 0.
func TestHookWithoutADaemon(t *testing.T) {
	t.Parallel()
	input := `{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}`
	t.Run("none", func(t *testing.T) {
		var out bytes.Buffer
		e := &env{stdout: &out, stderr: io.Discard, home: t.TempDir()}
		if err := e.hook(t.Context(), api.HookStop, "me", time.Second, strings.NewReader(input)); err == nil || out.Len() > 0 {
			t.Errorf("hook = %v, output %q; want an error and no output", err, out.String())
		}
	})
	t.Run("stuck", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		defer srv.Close()
		defer close(release)
		host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		home := t.TempDir()
		if err := api.WriteDaemonInfo(home, api.DaemonInfo{PID: os.Getpid(), Host: host, Port: p, Token: "t"}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		e := &env{stdout: &out, stderr: io.Discard, home: home}
		start := time.Now()
		err := e.hook(t.Context(), api.HookStop, "me", 500*time.Millisecond, strings.NewReader(input))
		if took := time.Since(start); err == nil || out.Len() > 0 || took > 3*time.Second {
			t.Errorf("hook = %v after %s, output %q; want an error within the timeout and no output", err, took, out.String())
		}
	})
	t.Run("command", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"hook", "Stop", "--agent", "me", "--home", t.TempDir()}, &out, &errb)
		if code != 0 || out.Len() > 0 || !strings.Contains(errb.String(), "nothing added") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, nothing, and why on stderr", code, out.String(), errb.String())
		}
	})
}
