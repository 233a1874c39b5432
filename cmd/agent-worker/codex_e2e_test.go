package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// codexCLI returns the real codex CLI, or skips the test without it (fails
// it under make test-e2e, which installs it).
func codexCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("codex")
	if err != nil {
		if os.Getenv("AGENT_WORKER_E2E_CLIS") == "1" {
			t.Fatal("codex CLI not on PATH although AGENT_WORKER_E2E_CLIS=1")
		}
		t.Skip("codex CLI not on PATH: run make test-e2e")
	}
	return path
}

// codexModel is the scripted model server in a process of its own: this
// package may not import plugins/internal/fakemodel, so it runs the test
// binary of plugins/codex as a helper (TestFakeModelProcess there).
type codexModel struct {
	URL    string
	stdin  io.WriteCloser
	stdout *bufio.Reader
	cmd    *exec.Cmd
}

// codexRequest is one request the model server received.
type codexRequest struct {
	Path    string
	Body    map[string]any
	RawBody []byte
}

func startCodexModel(t *testing.T, turns ...map[string]any) *codexModel {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "codex.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, "../../plugins/codex").CombinedOutput(); err != nil {
		t.Fatalf("build the model helper: %v\n%s", err, out)
	}
	script, _ := json.Marshal(turns)
	m := &codexModel{cmd: exec.Command(bin, "-test.run", "^TestFakeModelProcess$")}
	m.cmd.Env = append(os.Environ(), "AGENT_WORKER_FAKEMODEL="+string(script))
	m.cmd.Stderr = os.Stderr
	var err error
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stdin.Close()
		m.cmd.Process.Kill()
		m.cmd.Wait()
	})
	m.stdout = bufio.NewReader(out)
	line, err := m.stdout.ReadString('\n')
	if !strings.HasPrefix(line, "url ") {
		t.Fatalf("model helper said %q (%v)", line, err)
	}
	m.URL = strings.TrimSpace(strings.TrimPrefix(line, "url "))
	return m
}

// requests stops the server and returns what it received.
func (m *codexModel) requests(t *testing.T) []codexRequest {
	t.Helper()
	m.stdin.Close()
	for {
		line, err := m.stdout.ReadString('\n')
		if rest, ok := strings.CutPrefix(line, "requests "); ok {
			var reqs []codexRequest
			if err := json.Unmarshal([]byte(rest), &reqs); err != nil {
				t.Fatal(err)
			}
			return reqs
		}
		if err != nil {
			t.Fatalf("model helper ended without its requests: %v", err)
		}
	}
}

// codexSend scripts the model to call the daemon's channel_send as Codex
// offers it: in namespace mcp__agent_worker.
func codexSend(message string) map[string]any {
	return map[string]any{"Tools": []map[string]any{{"Name": "mcp__agent_worker__channel_send", "Args": map[string]any{"message": message}}}}
}

// waitCodexRuns waits until the agent has n succeeded runs and an empty
// inbox, failing at once on a failed run.
func waitCodexRuns(c *cli, name string, n int) api.Agent {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := c.agent(name)
		succeeded := 0
		for _, r := range a.Runs {
			switch r.State {
			case "succeeded":
				succeeded++
			case "failed":
				c.t.Fatalf("run %s of %s failed: %s", r.ID, name, r.Error)
			}
		}
		if succeeded >= n && a.InboxDepth == 0 && a.State != "running" {
			return a
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %d succeeded runs of %s: %+v", n, name, a)
		}
		time.Sleep(50 * time.Millisecond) // another process's state
	}
}

// sessionOf returns the session id a run reported.
func sessionOf(c *cli, runID string) string {
	c.t.Helper()
	d, err := c.client().GetRun(context.Background(), runID)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range d.Events {
		var s struct {
			SessionID string `json:"session_id"`
		}
		if e.Kind == "session" && json.Unmarshal(e.Data, &s) == nil && s.SessionID != "" {
			return s.SessionID
		}
	}
	return ""
}

// The real codex CLI under the daemon, offline against the scripted model:
// bob answers through the daemon's MCP server, gets his system prompt as
// developer instructions, and his second run resumes his thread.
func TestE2ECodexBackend(t *testing.T) {
	codexCLI(t)
	t.Parallel()
	model := startCodexModel(t,
		codexSend("hello from bob"), map[string]any{"Text": "bob done"},
		codexSend("hello again from bob"), map[string]any{"Text": "bob done again"})
	c := newCLI(t)
	daemon := exec.Command(binary, "daemon")
	daemon.Env = append(c.env(), "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=x")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { _, err := api.ReadDaemonInfo(c.home); return err == nil })

	c.ok("new", "bob", "--backend", "codex", "--model", "openai/gpt-fake", "--system", "You are Bob. SYSTEM-MARKER-5120",
		"--config", `{"timeout": "30s"}`)
	c.ok("send", "bob", "please say hello")
	first := waitCodexRuns(c, "bob", 1)
	c.ok("send", "bob", "say it again")
	second := waitCodexRuns(c, "bob", 2)

	out := c.ok("peek")
	for _, want := range []string{"[bob] hello from bob", "[bob] hello again from bob"} {
		if !strings.Contains(out, want) {
			t.Errorf("the channel lacks %q:\n%s", want, out)
		}
	}
	thread := sessionOf(c, first.Runs[0].ID)
	if thread == "" || sessionOf(c, second.Runs[0].ID) != thread {
		t.Errorf("sessions of the two runs: %q and %q, want the same codex thread", thread, sessionOf(c, second.Runs[0].ID))
	}

	c.stopDaemon()
	reqs := model.requests(t)
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4 (two per run)", len(reqs))
	}
	if reqs[0].Path != "/v1/responses" || reqs[0].Body["model"] != "gpt-fake" {
		t.Errorf("first request: %s for model %v, want /v1/responses for gpt-fake", reqs[0].Path, reqs[0].Body["model"])
	}
	if !developerSays(reqs[0], "SYSTEM-MARKER-5120") {
		t.Error("the system prompt did not reach the model as developer instructions")
	}
	if !replays(reqs[2], "function_call", "hello from bob") {
		t.Error("the second run's first request lacks the first run's tool call: the thread was not resumed")
	}
}

// developerSays reports whether a developer message of a Responses API
// request contains text.
func developerSays(r codexRequest, text string) bool {
	input, _ := r.Body["input"].([]any)
	for _, in := range input {
		m, _ := in.(map[string]any)
		if m["role"] != "developer" {
			continue
		}
		b, _ := json.Marshal(m["content"])
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// replays reports whether a request's input holds an item of type typ
// mentioning text: history that only a resumed thread re-sends.
func replays(r codexRequest, typ, text string) bool {
	input, _ := r.Body["input"].([]any)
	for _, in := range input {
		m, _ := in.(map[string]any)
		b, _ := json.Marshal(m)
		if m["type"] == typ && strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}
