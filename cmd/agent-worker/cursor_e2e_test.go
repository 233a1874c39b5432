package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// cursorStandIn installs the scripted cursor-agent stand-in (the real CLI
// cannot be installed here), built once per test process, into a
// directory of its own, for PATH.
func cursorStandIn(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	testkit.Install(t, testkit.Build(t, "plugins/cursor/testdata/cursor-agent"), bin, "cursor-agent")
	return bin
}

// startCursorDaemon starts the daemon with bin first on its PATH and waits
// for it to publish daemon.json.
func (c *cli) startCursorDaemon(bin string) *exec.Cmd {
	c.t.Helper()
	daemon := exec.Command(binary, "daemon")
	for _, kv := range c.env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + bin + string(os.PathListSeparator) + v
		}
		daemon.Env = append(daemon.Env, kv)
	}
	if err := daemon.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.waitFor("the daemon", func() bool { d, err := api.ReadDaemonInfo(c.home); return err == nil && d.PID == daemon.Process.Pid })
	return daemon
}

// The cursor backend end to end, with the scripted cursor-agent stand-in
// (the real CLI cannot be installed here) found on the daemon's PATH:
// a message to carol makes her reply in the channel through the daemon's
// MCP server, her inbox is acked, and the project gets no .cursor folder.
func TestE2ECursorRepliesAndAcks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startCursorDaemon(cursorStandIn(t))
	go daemon.Wait()

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
	if entries, err := os.ReadDir(filepath.Join(c.home, "runs")); err != nil && !os.IsNotExist(err) {
		t.Errorf("read the run folders: %v", err)
	} else if len(entries) != 0 {
		t.Errorf("run folders left behind: %v", entries)
	}
}

// The token of a run that a SIGKILL of the daemon interrupted opens no MCP
// session once the next daemon has marked the run failed (issue 27, item
// 2): before, the run was failed but its token still posted.
func TestE2EInterruptedRunTokenDies(t *testing.T) {
	t.Parallel()
	bin := cursorStandIn(t)
	c := newCLI(t)
	daemon := c.startCursorDaemon(bin)
	record := filepath.Join(t.TempDir(), "record.json")
	cfg, _ := json.Marshal(map[string]any{"env": map[string]string{"STANDIN_RECORD": record, "STANDIN_MODE": "hang"},
		"sandbox": map[string]any{"write": []string{filepath.Dir(record)}}})
	c.ok("new", "carol", "--backend", "cursor", "--config", string(cfg))
	c.ok("send", "carol", "hold on")
	var rec struct {
		MCPJSON struct {
			MCPServers map[string]struct {
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		} `json:"mcp_json"`
	}
	c.waitFor("the hanging run's record", func() bool {
		b, err := os.ReadFile(record)
		return err == nil && json.Unmarshal(b, &rec) == nil && rec.MCPJSON.MCPServers["agent-worker"].Headers["Authorization"] != ""
	})
	auth := rec.MCPJSON.MCPServers["agent-worker"].Headers["Authorization"]
	initialize := func() int {
		t.Helper()
		d, err := api.ReadDaemonInfo(c.home)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", d.URL()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := initialize(); status != http.StatusOK {
		t.Fatalf("the running run's token opens an MCP session with %d, want 200", status)
	}
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	next := c.startCursorDaemon(bin)
	t.Cleanup(func() { next.Process.Kill(); next.Wait() })
	if status := initialize(); status == http.StatusOK {
		t.Errorf("the interrupted run's token still opens an MCP session (%d)", status)
	}
}
