package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
)

// `workflows` lists each workflow:tag a daemon runs with its state, file,
// agents and their states, and what its runs have spent, as a table and
// as JSON.
func TestE2EWorkflowsCommand(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "review.yaml")
	writeFile(t, file, `
name: review
agents:
  lead:
    backend: mock
    config: {script: [{usage: {input: 100, output: 10, cost: 0.5}}, {reply: "@helper check it"}]}
  helper:
    backend: mock
    config: {script: [{usage: {input: 50, output: 5, cost: 0.25}}, {result: "looks good"}]}
  broken:
    backend: mock
    config: {script: [{fail: "model unreachable", permanent: true}]}
kickoff: "@lead @broken start"
`)
	c.ok("start", file, "--tag", "pr-1", "--background")

	var wf api.Workflow
	listed := func() bool {
		var l api.WorkflowList
		if err := json.Unmarshal([]byte(c.ok("workflows", "--json")), &l); err != nil {
			t.Fatalf("workflows --json: %v", err)
		}
		for _, w := range l.Workflows {
			if w.Target == "@review:pr-1" {
				wf = w
			}
		}
		for _, m := range wf.Members {
			// broken's failed run moves it to idle, then to failed:
			// wait for where it settles.
			if m.State == api.AgentRunning || m.Name == "broken" && m.State == api.AgentIdle {
				return false
			}
		}
		return wf.Spend != nil && wf.Spend.Runs == 3
	}
	c.waitFor("the team's three runs", listed)

	if wf.State != api.WorkflowRunning || wf.SourcePath != file {
		t.Errorf("workflow = %s from %q, want running from %s", wf.State, wf.SourcePath, file)
	}
	wantMembers := []api.Member{{Name: "broken", State: api.AgentFailed}, {Name: "helper", State: api.AgentIdle}, {Name: "lead", State: api.AgentIdle}}
	if diff := cmp.Diff(wantMembers, wf.Members); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	wantSpend := api.Spend{Runs: 3, FailedRuns: 1, InputTokens: 150, OutputTokens: 15, CostUSD: 0.75}
	if diff := cmp.Diff(wantSpend, *wf.Spend); diff != "" {
		t.Errorf("spend (-want +got):\n%s", diff)
	}

	out := c.ok("workflows")
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "@review:pr-1 ") {
			row = line
		}
	}
	if !strings.HasPrefix(out, "WORKFLOW") || row == "" {
		t.Fatalf("workflows printed no header or no row for @review:pr-1:\n%s", out)
	}
	for _, want := range []string{"running", "broken (failed), helper (idle), lead (idle)", " 3 ", " 1 ", "150/15", "$0.7500", file} {
		if !strings.Contains(row, want) {
			t.Errorf("the @review:pr-1 row lacks %q:\n%s", want, out)
		}
	}
}

// A FIFO given as a workflow file is refused at once, saying so, and
// leaves the daemon free (issue 27): before, start blocked and a daemon
// goroutine stayed in open for good.
func TestE2EFIFOWorkflowRefused(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	fifo := filepath.Join(t.TempDir(), "team.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.run("start", fifo, "--background")
	if r.code == 0 || !strings.Contains(r.stderr, "is not a regular file (a FIFO)") {
		t.Errorf("start of a FIFO: exit %d, stderr %q; want it refused as not a regular file", r.code, r.stderr)
	}
	if out := c.ok("status"); !strings.Contains(out, "daemon:    running") {
		t.Errorf("status after the FIFO:\n%s", out)
	}
}

// A message that is not valid UTF-8 is refused with a 400, over HTTP, MCP
// and the CLI, as a NUL byte is, instead of being stored with U+FFFD in
// its place (issue 27).
func TestE2EInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon()
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	c.ok("new", "bob", "--backend", "mock")
	post := func(path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", d.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST %s: read the answer: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}
	if status, body := post("/send", d.Token, "{\"target\": \"bob\", \"message\": \"hi \xff\xfe there\"}"); status != 400 || !strings.Contains(body, "not valid UTF-8 (at byte") {
		t.Errorf("POST /send with invalid UTF-8 = %d %s; want 400 saying so", status, body)
	}
	mcp := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"channel_send\",\"arguments\":{\"message\":\"\xff\"}}}"
	// An agent's token: without one the body is refused unread (401).
	_, bobToken := c.agentToken("bob")
	if status, body := post("/mcp", bobToken, mcp); status != 400 || !strings.Contains(body, "not valid UTF-8") {
		t.Errorf("POST /mcp with invalid UTF-8 = %d %s; want 400 saying so", status, body)
	}
	if r := c.run("send", "bob", "hi \xff\xfe there"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "argument 2 is not valid UTF-8") {
		t.Errorf("send with invalid UTF-8: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := c.ok("peek"); strings.Contains(out, "\uFFFD") || strings.Contains(out, "there") {
		t.Errorf("a refused message was stored:\n%s", out)
	}
}
