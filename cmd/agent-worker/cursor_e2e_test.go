package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// The cursor backend end to end, with the scripted cursor-agent stand-in
// (the real CLI cannot be installed here) found on the daemon's PATH:
// a message to carol makes her reply in the channel through the daemon's
// MCP server, her inbox is acked, and the project gets no .cursor folder.
func TestE2ECursorRepliesAndAcks(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "cursor-agent"), "../../plugins/cursor/testdata/cursor-agent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the cursor-agent stand-in: %v\n%s", err, out)
	}
	c := newCLI(t)
	daemon := exec.Command(binary, "daemon")
	for _, kv := range c.env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + bin + string(os.PathListSeparator) + v
		}
		daemon.Env = append(daemon.Env, kv)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { d, err := api.ReadDaemonInfo(c.home); return err == nil && d.PID == daemon.Process.Pid })

	record := filepath.Join(t.TempDir(), "record.json")
	// The stand-in reports what it was given in a file the agent's
	// sandbox must let it write.
	cfg, _ := json.Marshal(map[string]any{"env": map[string]string{"STANDIN_RECORD": record},
		"sandbox": map[string]any{"write": []string{filepath.Dir(record)}}})
	c.ok("new", "carol", "--backend", "cursor", "--system", "Answer in one line.", "--config", string(cfg))
	c.ok("send", "carol", "what is in the README?")

	c.waitFor("carol's reply", func() bool {
		return strings.Contains(c.ok("peek"), "[carol] cursor stand-in handled 1 message(s)")
	})
	c.waitFor("carol's inbox to be acked", func() bool { return c.agent("carol").InboxDepth == 0 })
	if a := c.agent("carol"); len(a.Runs) != 1 || a.Runs[0].State != "succeeded" {
		t.Errorf("carol's runs = %+v", a.Runs)
	}

	var rec struct {
		Args   []string `json:"args"`
		Prompt string   `json:"prompt"`
	}
	if b, err := os.ReadFile(record); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("the stand-in left no record: %v", err)
	}
	if !strings.HasPrefix(rec.Prompt, "## System\nAnswer in one line.") || !strings.Contains(rec.Prompt, "what is in the README?") {
		t.Errorf("prompt cursor-agent got:\n%s", rec.Prompt)
	}
	if _, err := os.Stat(filepath.Join(c.home, ".cursor")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the project (%s) got a .cursor folder: %v", c.home, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(c.home, "runs")); len(entries) != 0 {
		t.Errorf("run folders left behind: %v", entries)
	}
}
