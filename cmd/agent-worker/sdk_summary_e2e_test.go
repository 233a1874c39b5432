package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The sdk memory's summary through the daemon: once an agent's memory
// outgrows memory_tokens, the run it drops is summarised by the scripted
// model, the summary is in the run's logs and opens the next ask's
// conversation, and `reset` forgets it with the rest.
func TestE2ESDKMemorySummaryAndReset(t *testing.T) {
	t.Parallel()
	m := startModel(t, false,
		modelTurn{"Text": "Noted the code word."},
		modelTurn{"Text": "Second task done."},
		modelTurn{"Text": "You were told the code word PINEAPPLE."}, // the summary of the first ask
		modelTurn{"Text": "It is PINEAPPLE."},
		modelTurn{"Text": "I have no memory of a code word."})
	c := newCLI(t)
	c.startModelDaemon(m)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.yaml"), `
agents:
  alice:
    model: anthropic/claude-sonnet-4-5
    tools: []
    config: {memory_tokens: 300}
`)
	c.ok("start", filepath.Join(dir, "team.yaml"), "--background")
	pad := " " + strings.Repeat("lorem ipsum ", 60) // each ask is about 200 tokens of memory
	c.ok("ask", "alice@team", "the code word is PINEAPPLE"+pad)
	c.ok("ask", "alice@team", "do the second task"+pad)

	reqs := m.requests(t)
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].RawBody), "summary") || !strings.Contains(string(reqs[2].RawBody), "the code word is PINEAPPLE") {
		t.Fatalf("after two asks the model got %d requests; want the second ask's summary request with the first ask in it", len(reqs))
	}
	if logs := c.ok("logs", c.agent("alice@team").Runs[0].ID); !strings.Contains(logs, "You were told the code word PINEAPPLE.") {
		t.Errorf("the second run's logs do not show the summary:\n%s", logs)
	}

	firstMessage := func(r modelRequest) string {
		msgs, _ := r.Body["messages"].([]any)
		if len(msgs) == 0 {
			return ""
		}
		return fmt.Sprint(msgs[0])
	}
	if out := c.ok("ask", "alice@team", "what is the code word?"); !strings.Contains(out, "It is PINEAPPLE.") {
		t.Errorf("ask printed %q", out)
	}
	if first := firstMessage(m.requests(t)[3]); !strings.Contains(first, "A summary of your 1 older run") || !strings.Contains(first, "You were told the code word PINEAPPLE.") {
		t.Errorf("the third ask's conversation opens with %q; want the summary", first)
	}

	c.ok("reset", "alice@team")
	c.ok("ask", "alice@team", "what is the code word?")
	reqs = m.requests(t)
	last := reqs[len(reqs)-1]
	if msgs, _ := last.Body["messages"].([]any); len(msgs) != 1 || strings.Contains(string(last.RawBody), "You were told the code word") {
		t.Errorf("after reset the model got %d messages: %v; want only the new prompt, no summary", len(msgs), msgs)
	}
}
