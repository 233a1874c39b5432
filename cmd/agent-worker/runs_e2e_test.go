package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// mockConfig is a mock agent's --config with script.
func mockConfig(t *testing.T, script ...map[string]any) string {
	b, err := json.Marshal(map[string]any{"script": script})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestE2ERunsAndLogs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	long := strings.Repeat("lorem ipsum ", 300) // 3,600 bytes
	c.ok("new", "alice", "--backend", "mock", "--model", "anthropic/claude-haiku-4-5", "--system", "You are alice.",
		"--config", mockConfig(t,
			map[string]any{"text": "thinking it over"},
			map[string]any{"tool": "team_doc_write", "args": map[string]any{"content": long}},
			map[string]any{"tool": "team_doc_read"},
			map[string]any{"usage": map[string]any{"input": 2000, "output": 100}},
			map[string]any{"result": "all good"}))
	c.ok("new", "bob", "--backend", "mock", "--model", "acme/unknown-model",
		"--config", mockConfig(t,
			map[string]any{"usage": map[string]any{"input": 10, "output": 5}},
			map[string]any{"fail": "bob broke", "permanent": true}))
	var res api.RunResult
	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "check the plan")), &res); err != nil {
		t.Fatal(err)
	}
	if r := c.run("serve", "bob", "try"); r.code == 0 {
		t.Fatal("bob's run succeeded")
	}

	// runs: newest first, with tokens and cost.
	out := c.ok("runs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "RUN") {
		t.Fatalf("runs printed:\n%s", out)
	}
	bob, alice := strings.Fields(lines[1]), strings.Fields(lines[2])
	if bob[1] != "bob" || bob[4] != "failed" || !strings.Contains(lines[1], "10/5") || !strings.HasSuffix(lines[1], "cost unknown") {
		t.Errorf("bob's line: %q", lines[1])
	}
	// haiku 4.5: $1 in, $5 out per million tokens.
	if alice[0] != res.RunID || alice[1] != "alice" || alice[2] != "global:main" || alice[3] != "mock" || alice[4] != "succeeded" ||
		!strings.Contains(lines[2], "2000/100") || !strings.HasSuffix(lines[2], "$0.0025") {
		t.Errorf("alice's line: %q", lines[2])
	}
	if out := c.ok("runs", "--failed"); strings.Contains(out, "alice") || !strings.Contains(out, "bob") {
		t.Errorf("runs --failed:\n%s", out)
	}
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "alice", "-n", "5", "--json")), &l); err != nil || len(l.Runs) != 1 ||
		l.Runs[0].CostUSD == nil || *l.Runs[0].CostUSD != 0.0025 || l.Runs[0].CostSource != "prices" {
		t.Errorf("runs alice --json = %+v, %v", l, err)
	}

	// logs: the prompt, the text, tool calls indented with long results
	// cut, usage, the result and how the run ended.
	out = c.ok("logs", res.RunID)
	for _, want := range []string{
		"run " + res.RunID + ": alice (mock, attempt 1)",
		" system      You are alice.\n",
		" inbox       #1 user: @alice check the plan\n",
		" text        thinking it over\n",
		"   tool call   team_doc_write {\"content\":\"lorem ipsum lorem",
		"     result      ",
		"   tool call   team_doc_read {}\n",
		" usage       2000 tokens in / 100 out\n",
		" result      all good\n",
		"end: succeeded after ",
		"2000 tokens in / 100 out; $0.0025\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "bytes in all)") {
		t.Errorf("logs did not cut the long tool call or result:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 2200 {
			t.Errorf("a line of %d bytes: long results are not cut", len(line))
		}
	}
	bobRun := strings.Fields(lines[1])[0]
	if out := c.ok("logs", bobRun); !strings.Contains(out, "end: failed") || !strings.Contains(out, "cost unknown") || !strings.Contains(out, "error: ") ||
		!strings.Contains(out, "bob broke") {
		t.Errorf("logs of the failed run:\n%s", out)
	}
	jsonOut := strings.Split(strings.TrimSpace(c.ok("logs", res.RunID, "--json")), "\n")
	var first, last api.RunEvent
	if json.Unmarshal([]byte(jsonOut[0]), &first) != nil || json.Unmarshal([]byte(jsonOut[len(jsonOut)-1]), &last) != nil ||
		first.Kind != "prompt" || last.Kind != "end" {
		t.Errorf("logs --json: first %q, last %q", jsonOut[0], jsonOut[len(jsonOut)-1])
	}
	if r := c.run("logs", "run_nope"); r.code != api.ExitNotFound || !strings.Contains(r.stderr, "run run_nope not found") {
		t.Errorf("logs of an unknown run: exit %d, stderr %q", r.code, r.stderr)
	}

	// Totals per agent and per workflow:tag.
	if out := c.ok("info", "alice"); !strings.Contains(out, "1 run(s), 0 failed; 2000 tokens in / 100 out; $0.0025") {
		t.Errorf("info alice:\n%s", out)
	}
	if out := c.ok("info", "@global"); !strings.Contains(out, "2 run(s), 1 failed; 2010 tokens in / 105 out; $0.0025 + 1 run(s) at unknown cost") {
		t.Errorf("info @global:\n%s", out)
	}
	if out := c.ok("status"); !strings.Contains(out, "$0.0025") || !strings.Contains(out, "1 run(s) at unknown cost") {
		t.Errorf("status:\n%s", out)
	}
}

// TestE2ELogsFollow follows a run that waits for the test: its first
// events print while it runs, and logs --follow exits when the run ends.
func TestE2ELogsFollow(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	gate := filepath.Join(t.TempDir(), "go")
	c.ok("new", "alice", "--backend", "mock", "--config", mockConfig(t,
		map[string]any{"tool": "team_members"},
		map[string]any{"shell": "while [ ! -e " + gate + " ]; do sleep 0.05; done; echo released"},
		map[string]any{"result": "finished"}))
	c.ok("send", "alice", "start")
	var runID string
	c.waitFor("alice's run", func() bool {
		var l api.RunList
		if json.Unmarshal([]byte(c.ok("runs", "--json")), &l) != nil || len(l.Runs) == 0 {
			return false
		}
		runID = l.Runs[0].ID
		return true
	})
	follow := exec.Command(binary, "logs", runID, "--follow")
	follow.Env = c.env()
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	// A deadline, not a timing goal: a stream that never ends fails the
	// test instead of hanging it.
	deadline := time.AfterFunc(60*time.Second, func() { _ = follow.Process.Kill() })
	defer deadline.Stop()
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	released := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !released && strings.Contains(sc.Text(), " result ") && strings.Contains(out.String(), "tool call   team_members") {
			// The tool's result arrived while the run waits: let it end.
			released = true
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := follow.Wait(); err != nil {
		t.Fatalf("logs --follow: %v\n%s", err, out.String())
	}
	if !released {
		t.Fatalf("logs --follow never showed the tool result while the run waited:\n%s", out.String())
	}
	for _, want := range []string{" text        released\n", " result      finished\n", "end: succeeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("logs --follow lacks %q:\n%s", want, out.String())
		}
	}
}
