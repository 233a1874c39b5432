package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// claudeSession runs the real Claude Code once in proj with prompt,
// against the scripted model at modelURL, with the hooks `hooks install`
// wrote; it returns what Claude printed (stream-json).
func (c *cli) claudeSession(claude, proj, modelURL, prompt string) string {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", prompt, "--output-format", "stream-json", "--verbose", "--allowedTools", "Edit", "Bash")
	cmd.Dir = proj
	cmd.Env = append(c.env(), "ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// hookExits lists the exit codes of the hooks Claude's stream reports, by
// event, and whether the session's result was a success.
func hookExits(stream string) (exits map[string][]int, success bool) {
	exits = map[string][]int{}
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			HookEvent string `json:"hook_event"`
			ExitCode  *int   `json:"exit_code"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Type == "system" && line.Subtype == "hook_response" && line.ExitCode != nil {
			exits[line.HookEvent] = append(exits[line.HookEvent], *line.ExitCode)
		}
		if line.Type == "result" && line.Subtype == "success" {
			success = true
		}
	}
	return exits, success
}

// A person's own Claude Code session walks an effort like a daemon run
// (issue 44): with the hooks `hooks install` wrote, the scripted model's
// Edit in phase plan of the example skill is denied and the phase's
// reason reaches the model's next request; once the effort moves on the
// same Edit goes through; the status line shows the phase; and with the
// daemon stopped every hook exits 0, the status line is empty at once and
// the session goes on.
func TestE2EHooksPreToolUseGate(t *testing.T) {
	t.Parallel()
	claude := realCLI(t, "claude")
	c := newCLI(t)
	proj := realPath(t, t.TempDir())
	file := filepath.Join(proj, "main.go")
	if err := os.WriteFile(file, []byte("package main // OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := func(id, from, to string) modelTurn {
		return modelTurn{"Tools": []any{map[string]any{"ID": id, "Name": "Edit", "Args": map[string]any{
			"file_path": file, "old_string": from, "new_string": to}}}}
	}
	// Claude Code edits only a file its session has read.
	read := modelTurn{"Tools": []any{map[string]any{"Name": "Read", "Args": map[string]any{"file_path": file}}}}
	model := startModel(t, false,
		read, edit("toolu_plan", "// OLD", "// IN-PLAN"), modelTurn{"Text": "I will plan first"},
		read, edit("toolu_test", "// OLD", "// IN-TEST-FIRST"), modelTurn{"Text": "edited"},
		read, edit("toolu_down", "// IN-TEST-FIRST", "// DAEMON-DOWN"), modelTurn{"Text": "the daemon is gone and I go on"})
	c.startDaemon()
	c.ok("new", "me", "--backend", "external")
	installExample(t, c)
	c.ok("effort", "start", proj, "implement", "--agent", "me")
	c.ok("hooks", "install", "me", "--dir", proj)
	settings, _ := os.ReadFile(filepath.Join(proj, ".claude", "settings.local.json"))
	for _, want := range []string{"PreToolUse", "PreCompact", "statusLine", "statusline --agent me@global:main"} {
		if !bytes.Contains(settings, []byte(want)) {
			t.Errorf("the installed settings lack %s:\n%s", want, settings)
		}
	}

	const reason = "phase plan of skill implement does not allow Edit"
	stream := c.claudeSession(claude, proj, model.URL, "PLAN-MARK change main.go")
	next, ok := requestWith(model.requests(t), `"tool_use_id":"toolu_plan"`)
	if !ok || !bytes.Contains(next.RawBody, []byte(reason)) || !bytes.Contains(next.RawBody, []byte("finish this phase first")) {
		t.Errorf("the model's request after the denied Edit does not carry the phase's reason (found the request: %v)", ok)
	}
	if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte("// OLD")) {
		t.Errorf("the Edit the gate denied was made: %s", b)
	}
	if _, success := hookExits(stream); !success {
		t.Errorf("the session with a denied Edit did not succeed:\n%s", stream)
	}

	c.ok("effort", "next", "--agent", "me", "--proof", "plan_summary=change the comment")
	if got := strings.TrimSpace(c.ok("statusline", "--agent", "me")); got != "[implement:P2]" {
		t.Errorf("statusline = %q, want [implement:P2]", got)
	}
	c.claudeSession(claude, proj, model.URL, "TEST-MARK change main.go")
	if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte("// IN-TEST-FIRST")) {
		t.Errorf("after effort next the same Edit was not made: %s", b)
	}
	if next, ok := requestWith(model.requests(t), `"tool_use_id":"toolu_test"`); !ok || bytes.Contains(next.RawBody, []byte("does not allow")) {
		t.Errorf("the Edit of phase test-first was refused (found the request: %v)", ok)
	}

	c.stopDaemon()
	c.waitFor("the daemon to be gone", func() bool { _, err := api.ReadDaemonInfo(c.home); return err != nil })
	start := time.Now()
	r := c.run("statusline", "--agent", "me")
	took := time.Since(start)
	if r.code != 0 || r.stdout != "" {
		t.Errorf("statusline with the daemon down: exit %d, printed %q; want 0 and nothing", r.code, r.stdout)
	}
	t.Logf("statusline with the daemon down: %v for the whole process", took)
	if took > time.Second {
		t.Errorf("statusline with the daemon down took %v: it must be instant", took)
	}
	// Every command the settings hold, as Claude Code runs it, answers at
	// once with nothing and exit 0 (Claude's stream reports only
	// SessionStart's).
	var installed struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
		StatusLine struct{ Command string }
	}
	b, _ := os.ReadFile(filepath.Join(proj, ".claude", "settings.local.json"))
	if err := json.Unmarshal(b, &installed); err != nil {
		t.Fatal(err)
	}
	commands := map[string]string{"statusLine": installed.StatusLine.Command}
	for event, groups := range installed.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				commands[event] = h.Command
			}
		}
	}
	in := `{"session_id":"s-down","cwd":` + strconv.Quote(proj) + `,"tool_name":"Edit","tool_input":{"file_path":"main.go"}}`
	for what, command := range commands {
		cmd := exec.Command("sh", "-c", command)
		cmd.Env, cmd.Dir, cmd.Stdin = c.env(), proj, strings.NewReader(in)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		if took := time.Since(start); err != nil || out.Len() > 0 || took > 2*time.Second {
			t.Errorf("with the daemon down %s (%s): %v after %v, printed %q; want exit 0 and nothing, at once", what, command, err, took, out.String())
		}
	}
	if len(commands) < 8 {
		t.Errorf("the settings hold %d commands of ours: %v", len(commands), commands)
	}

	stream = c.claudeSession(claude, proj, model.URL, "DOWN-MARK go on")
	exits, success := hookExits(stream)
	if !success {
		t.Errorf("the session with the daemon down did not succeed:\n%s", stream)
	}
	for event, codes := range exits {
		for _, code := range codes {
			if code != 0 {
				t.Errorf("with the daemon down the %s hook exited %d", event, code)
			}
		}
	}
	if len(exits["SessionStart"]) == 0 {
		t.Errorf("claude's stream reports no hook exits with the daemon down:\n%s", stream)
	}
	if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte("// DAEMON-DOWN")) {
		t.Errorf("with the daemon down the Edit was not made (a live session's gate fails open): %s", b)
	}
}
