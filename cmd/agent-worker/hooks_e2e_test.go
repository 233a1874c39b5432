package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// open lets the model's turn with that gate answer.
func (m *model) open(t *testing.T, gate string) {
	t.Helper()
	if _, err := fmt.Fprintf(m.stdin, "open %s\n", gate); err != nil {
		t.Fatal(err)
	}
}

// The real Claude Code, offline against the scripted model, with the hooks
// `hooks install` wrote into a project that has hooks of its own: the
// unread mention reaches the model through SessionStart, a message sent
// during the session through PostToolUse, a mention that arrives while
// the model writes its answer holds the Stop once and not a second time,
// and uninstall gives the project back its own settings.
func TestE2EClaudeHooks(t *testing.T) {
	t.Parallel()
	claude := realCLI(t, "claude")
	model := startModel(t, false,
		// 1: after SessionStart and the prompt; its Bash call sends a message.
		modelTurn{"Tools": []any{map[string]any{"Name": "Bash", "Args": map[string]any{
			"command": shellQuote(binary) + " send me 'MID-MARK a message during the session'", "description": "send"}}}},
		// 2: after PostToolUse; a mention arrives while it is held.
		modelTurn{"Text": "first answer", "Gate": "answer"},
		// 3: held by the Stop hook; another mention arrives meanwhile.
		modelTurn{"Text": "answered", "Gate": "again"})
	c := newCLI(t)
	c.startDaemon()
	c.ok("new", "me", "--backend", "external", "--system", "You review Go code. ROLE-MARK")
	c.ok("new", "alice", "--backend", "external")
	c.ok("send", "me", "START-MARK please review the parser")

	proj := t.TempDir()
	mine := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}],` +
		` "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "echo mine"}]}]}, "model": "sonnet"}`
	settings := filepath.Join(proj, ".claude", "settings.local.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	if err := os.WriteFile(settings, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("hooks", "install", "me", "--dir", proj)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "PROMPT-MARK review it", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash")
	cmd.Dir = proj
	cmd.Env = append(c.env(), "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claude stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	})

	model.next(t, "gate answer") // the model writes its answer
	if a := c.agent("me"); a.State != "attached" || a.Session == nil || a.InboxDepth != 0 {
		t.Errorf("during the session me is %s (session %+v, %d unread); want attached with nothing unread", a.State, a.Session, a.InboxDepth)
	}
	if out := c.ok("status"); !strings.Contains(out, "attached (Claude Code in ") {
		t.Errorf("status does not show the attached session:\n%s", out)
	}
	c.ok("send", "@global", "@me STOP-MARK one more thing")
	model.open(t, "answer")
	model.next(t, "gate again") // the Stop hook held claude: it asks the model again
	c.ok("send", "@global", "@me LATE-MARK for the next time")
	model.open(t, "again")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("claude: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("claude did not end: was its Stop held a second time?")
	}

	// What Claude's stream says: the SessionStart hook's answer, and one
	// Stop held.
	var started, held int
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Type      string          `json:"type"`
			Subtype   string          `json:"subtype"`
			HookEvent string          `json:"hook_event"`
			Stdout    string          `json:"stdout"`
			Message   json.RawMessage `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Type == "system" && line.Subtype == "hook_response" && line.HookEvent == "SessionStart" {
			started++
			for _, mark := range []string{"START-MARK", "ROLE-MARK", "you are me", "alice"} {
				if !strings.Contains(line.Stdout, mark) {
					t.Errorf("the SessionStart hook's answer lacks %q: %s", mark, line.Stdout)
				}
			}
		}
		if line.Type == "user" && bytes.Contains(line.Message, []byte("Stop hook feedback")) {
			held++
			if !bytes.Contains(line.Message, []byte("STOP-MARK")) {
				t.Errorf("the Stop hook's reason lacks the waiting mention: %s", line.Message)
			}
		}
	}
	if started != 1 || held != 1 {
		t.Errorf("claude's stream shows %d SessionStart hook answers and %d held Stops; want 1 and 1", started, held)
	}

	// What the model received, request by request.
	reqs := model.requests(t)
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3 (prompt, after the tool, after the held Stop)", len(reqs))
	}
	for i, want := range []struct{ has, lacks []string }{
		{[]string{"START-MARK", "ROLE-MARK", "PROMPT-MARK"}, []string{"MID-MARK"}},
		{[]string{"MID-MARK", "PostToolUse"}, []string{"STOP-MARK"}},
		{[]string{"STOP-MARK"}, []string{"LATE-MARK"}},
	} {
		for _, m := range want.has {
			if !bytes.Contains(reqs[i].RawBody, []byte(m)) {
				t.Errorf("model request %d lacks %s", i+1, m)
			}
		}
		for _, m := range want.lacks {
			if bytes.Contains(reqs[i].RawBody, []byte(m)) {
				t.Errorf("model request %d already has %s", i+1, m)
			}
		}
	}

	// The session ended: me is idle again, the late mention waits for the
	// next session.
	a := c.agent("me")
	if a.State != "idle" || a.Session != nil || a.InboxDepth != 1 {
		t.Errorf("after the session me is %s (session %+v, %d unread); want idle, detached, the late mention unread", a.State, a.Session, a.InboxDepth)
	}

	c.ok("hooks", "uninstall", "me", "--dir", proj)
	var want, got any
	json.Unmarshal([]byte(mine), &want)
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after uninstall the project's settings differ from its own (-want +got):\n%s", diff)
	}
}
