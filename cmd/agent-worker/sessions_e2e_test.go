package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// Issue 44's sessions, with the real Claude Code offline against the
// scripted model and the hooks `hooks install` wrote, for an agent whose
// effort (the example skill) is in its plan phase: the person's prompt
// and the session's Read calls land in the session's transcript (`logs`);
// each Read adds its file to the session's loaded files, and the first
// one into sub/ brings sub/AGENTS.md into the model's context once. A
// /compact of the session (the pinned CLI runs its PreCompact hook, though
// a session this short has too little to compact) stores the dehydration
// payload, and the next session of the agent starts with it in its
// SessionStart context, chained to the first in `sessions`.
func TestE2ESessionChain(t *testing.T) {
	t.Parallel()
	claude := realCLI(t, "claude")
	c := newCLI(t)
	installExample(t, c)
	proj := realPath(t, t.TempDir())
	sub := filepath.Join(proj, "sub")
	os.MkdirAll(sub, 0o755)
	for name, content := range map[string]string{"AGENTS.md": "AGENTS-MARK keep functions short\n", "a.txt": "alpha\n", "b.txt": "beta\n"} {
		if err := os.WriteFile(filepath.Join(sub, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"Name": "Read", "Args": map[string]any{"file_path": filepath.Join(sub, "a.txt")}}}, "InputTokens": 3000, "OutputTokens": 10},
		modelTurn{"Tools": []any{map[string]any{"Name": "Read", "Args": map[string]any{"file_path": "sub/b.txt"}}}, "InputTokens": 4000, "OutputTokens": 21},
		modelTurn{"Text": "NEXT-MARK I will write the plan next", "InputTokens": 4321, "OutputTokens": 21},
		modelTurn{"Text": "picked up where I was"})
	c.startDaemon()
	c.ok("new", "me", "--backend", "external")
	c.ok("effort", "start", proj, "implement", "--agent", "me")
	c.ok("hooks", "install", "me", "--dir", proj)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	claudeRun := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, claude, append(args, "--output-format", "stream-json", "--verbose", "--allowedTools", "Read")...)
		cmd.Dir = proj
		cmd.Env = append(c.env(), "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("claude %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sessionID := func(stream string) string {
		for _, l := range strings.Split(stream, "\n") {
			var line struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && line.SessionID != "" {
				return line.SessionID
			}
		}
		t.Fatalf("no session id in claude's stream:\n%s", stream)
		return ""
	}

	first := sessionID(claudeRun("-p", "PROMPT-MARK plan the change"))
	reqs := model.requests(t)
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3 (prompt, after each Read)", len(reqs))
	}
	if !bytes.Contains(reqs[1].RawBody, []byte("AGENTS-MARK")) {
		t.Error("the Read into sub/ did not bring sub/AGENTS.md into the model's context")
	}
	if n := bytes.Count(reqs[2].RawBody, []byte("AGENTS-MARK keep")); n != 1 {
		t.Errorf("after the second Read into sub/ the model's context holds AGENTS.md %d times, want once", n)
	}

	var list api.SessionList
	sessions := func() {
		t.Helper()
		list = api.SessionList{}
		if err := json.Unmarshal([]byte(c.ok("sessions", "me", "--json")), &list); err != nil {
			t.Fatal(err)
		}
	}
	sessions()
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions after the first: %+v", list.Sessions)
	}
	s1 := list.Sessions[0]
	want := []string{filepath.Join(sub, "a.txt"), filepath.Join(sub, "b.txt")}
	if s1.ID != first || s1.EndedAt == nil || strings.Join(s1.Loaded, " ") != strings.Join(want, " ") ||
		s1.Heartbeats < 5 || s1.ContextTokens < 4000+21 || s1.Effort != "effort-1" || s1.Phase != "plan" {
		t.Errorf("the first session = %+v; want %s ended, loaded %v, its hooks counted, at least the 4021 tokens of the answer before the last hook, effort-1 in plan", s1, first, want)
	}
	logs := c.ok("logs", s1.Run)
	for _, mark := range []string{"user_prompt", "PROMPT-MARK plan the change", "Read", "a.txt", "b.txt", "alpha"} {
		if !strings.Contains(logs, mark) {
			t.Errorf("logs %s lacks %q:\n%s", s1.Run, mark, logs)
		}
	}

	// The context use comes from the usage in Claude's transcript: the
	// last answer's when the Stop hook sees it written, else the one
	// before.

	// /compact runs the session's PreCompact hook: the payload is stored.
	claudeRun("-p", "/compact", "--resume", first)
	sessions()
	if len(list.Sessions) != 1 || !list.Sessions[0].Dehydrated {
		t.Fatalf("after /compact: %+v; want the first session dehydrated", list.Sessions)
	}
	payload := c.ok("session", "continue", "me")
	for _, mark := range []string{"effort-1", "phase 1 of 4: plan", "NEXT-MARK I will write the plan next", "a.txt", "b.txt"} {
		if !strings.Contains(payload, mark) {
			t.Errorf("session continue lacks %q:\n%s", mark, payload)
		}
	}

	// A new session of me continues it, starting from its payload.
	stream := claudeRun("-p", "carry on")
	second := sessionID(stream)
	started := 0
	for _, l := range strings.Split(stream, "\n") {
		var line struct {
			Type, Subtype, Stdout string
			HookEvent             string `json:"hook_event"`
		}
		if json.Unmarshal([]byte(l), &line) != nil || line.Subtype != "hook_response" || line.HookEvent != "SessionStart" {
			continue
		}
		started++
		for _, mark := range []string{"continues session " + first, "NEXT-MARK", "effort-1", "plan"} {
			if !strings.Contains(line.Stdout, mark) {
				t.Errorf("the second SessionStart's context lacks %q: %s", mark, line.Stdout)
			}
		}
	}
	if started != 1 {
		t.Errorf("claude's stream shows %d SessionStart hook answers, want 1", started)
	}
	reqs = model.requests(t)
	if last := reqs[len(reqs)-1].RawBody; !bytes.Contains(last, []byte("NEXT-MARK")) {
		t.Error("the second session's model request lacks the payload")
	}
	sessions()
	if len(list.Sessions) != 2 || list.Sessions[1].ID != second || list.Sessions[1].Prev != first {
		t.Errorf("sessions after the second: %+v; want %s continuing %s", list.Sessions, second, first)
	}
	if out := c.ok("sessions", "me"); !strings.Contains(out, second) || !strings.Contains(out, "effort-1:plan") {
		t.Errorf("sessions does not show the chain:\n%s", out)
	}
}
