package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

// The acp backend end to end with a scripted ACP agent
// (plugins/acp/testdata/fakeacp) in a team with a mock: carol's agent is
// prompted with her inbox, calls channel_send through the daemon's MCP
// server (bob, the mock, answers), continues the same ACP session on her
// second run (session/load), and `cancel` ends a hanging turn with
// session/cancel, leaving no agent process behind and the message unread.
func TestE2EACPAgentInATeam(t *testing.T) {
	t.Parallel()
	fake := testkit.Build(t, "plugins/acp/testdata/fakeacp")
	c := newCLI(t)
	c.startDaemon()

	state := t.TempDir()
	record := filepath.Join(state, "record.jsonl")
	script, _ := json.Marshal([]map[string]any{
		{"hang": true, "when": "hold on"},
		{"tool": "channel_send", "args": map[string]any{"message": "@bob hello from carol over ACP"}, "when": "README"},
		{"text": "turns before: {{turns}}"},
	})
	cfg, _ := json.Marshal(map[string]any{"command": []string{fake},
		"env":     map[string]string{"FAKEACP_SCRIPT": string(script), "FAKEACP_DIR": state, "FAKEACP_RECORD": record},
		"sandbox": map[string]any{"write": []string{state}}})
	c.ok("new", "bob", "--backend", "mock")
	c.ok("new", "carol", "--backend", "acp", "--system", "Answer in one line.", "--config", string(cfg))

	methods := func() []string {
		b, _ := os.ReadFile(record)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ Method string }
			if json.Unmarshal([]byte(l), &r) == nil {
				out = append(out, r.Method)
			}
		}
		return out
	}

	c.ok("send", "carol", "what is in the README?")
	c.waitFor("carol's message and bob's answer", func() bool {
		p := c.ok("peek")
		return strings.Contains(p, "[carol] @bob hello from carol over ACP") && strings.Contains(p, "[bob]")
	})
	c.waitFor("carol's inbox to be acked", func() bool { return c.agent("carol").InboxDepth == 0 })
	b, _ := os.ReadFile(record)
	if !strings.Contains(string(b), `## System\nAnswer in one line.`) || !strings.Contains(string(b), "what is in the README?") {
		t.Errorf("the prompt carol's agent got:\n%s", b)
	}

	c.ok("send", "carol", "and the README's license?")
	c.waitFor("carol's second run", func() bool {
		a := c.agent("carol")
		return len(a.Runs) >= 2 && a.Runs[0].State == "succeeded" && a.Runs[1].State == "succeeded"
	})
	if m := strings.Join(methods(), " "); strings.Count(m, "session/new") != 1 || strings.Count(m, "session/load") != 1 {
		t.Errorf("the second run did not continue the first one's session: %s", m)
	}

	c.ok("send", "carol", "hold on")
	c.waitFor("carol's hanging turn", func() bool { return strings.Count(strings.Join(methods(), " "), "session/prompt") == 3 })
	c.ok("cancel", "carol")
	// The daemon gives the plugin its grace before it signals the group:
	// the agent is told session/cancel and ends its turn itself.
	c.waitFor("the agent told session/cancel and its turn ended", func() bool {
		m := strings.Join(methods(), " ")
		return strings.Contains(m, "session/cancel") && strings.Contains(m, "cancelled")
	})
	c.waitFor("no agent process left", func() bool {
		return len(testkit.Pids(t, func(pid int) bool {
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			return err == nil && strings.HasPrefix(string(cmdline), fake+"\x00")
		})) == 0
	})
	if a := c.agent("carol"); a.InboxDepth != 1 {
		t.Errorf("carol after cancel: inbox %d, want the message unread", a.InboxDepth)
	}
}

// The acp backend's presets are backends of their own: `backends` lists
// them, and `new --backend gemini` runs `gemini --acp` from the daemon's
// PATH with no command in the agent's config (the scripted ACP agent
// stands in for Gemini CLI here; TestE2EACPGemini runs the real one).
func TestE2EACPPreset(t *testing.T) {
	t.Parallel()
	fake := testkit.Build(t, "plugins/acp/testdata/fakeacp")
	bin := t.TempDir()
	if err := os.Symlink(fake, filepath.Join(bin, "gemini")); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	c.startDaemon("PATH=" + bin + ":" + os.Getenv("PATH"))

	out := c.ok("backends")
	for _, name := range []string{"gemini", "claude-acp", "codex-acp", "opencode"} {
		if !regexp.MustCompile(`(?m)^backend\s+` + name + `\s`).MatchString(out) {
			t.Errorf("backends does not list %s:\n%s", name, out)
		}
	}

	state := t.TempDir()
	record := filepath.Join(state, "record.jsonl")
	script, _ := json.Marshal([]map[string]any{
		{"tool": "channel_send", "args": map[string]any{"message": "@bob dana here, through the gemini preset"}},
	})
	cfg, _ := json.Marshal(map[string]any{
		"env":     map[string]string{"FAKEACP_SCRIPT": string(script), "FAKEACP_DIR": state, "FAKEACP_RECORD": record},
		"sandbox": map[string]any{"write": []string{state}}})
	c.ok("new", "bob", "--backend", "mock")
	c.ok("new", "dana", "--backend", "gemini", "--config", string(cfg))
	c.ok("send", "dana", "say hello to bob")
	c.waitFor("dana's message through the preset", func() bool {
		return strings.Contains(c.ok("peek"), "[dana] @bob dana here, through the gemini preset")
	})
	if a := c.agent("dana"); a.Backend != "gemini" || len(a.Runs) == 0 || a.Runs[0].State != "succeeded" {
		t.Errorf("dana: backend %q, runs %+v", a.Backend, a.Runs)
	}
	b, _ := os.ReadFile(record)
	if !strings.Contains(string(b), "session/prompt") {
		t.Errorf("the gemini preset's command was not prompted:\n%s", b)
	}
}
