package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
