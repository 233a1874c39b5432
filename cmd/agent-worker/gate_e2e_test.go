package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// startEffortE2E starts an effort of the example skill for agent
// name@global:main on dir with `agent-worker effort start`, and walks it
// to phase through the daemon's store: the phases between need evidence
// a run would have to produce (TestE2EEffortAcceptance… walks them).
func startEffortE2E(t *testing.T, c *cli, name, dir string, phase int) (*store.DB, store.Effort) {
	t.Helper()
	installExample(t, c)
	if err := os.MkdirAll(dir, 0o755); err != nil { // the agent's workspace, before its first run
		t.Fatal(err)
	}
	c.ok("effort", "start", dir, "implement", "--agent", name+"@global")
	db, err := store.Open(t.Context(), filepath.Join(c.home, api.DBFile), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, ok, err := db.ActiveEffort(t.Context(), store.AgentKey{Name: name, Workflow: "global", Tag: "main"})
	if err != nil || !ok {
		t.Fatalf("%s's effort after effort start: %v, %v", name, ok, err)
	}
	for e.Phase < phase {
		if e, err = db.AdvanceEffort(t.Context(), store.Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: fmt.Sprint("n", e.Phase+1)}); err != nil {
			t.Fatal(err)
		}
	}
	return db, e
}

// lastRunLogs waits for name's latest run to end and returns its
// transcript as `logs` prints it.
func (c *cli) lastRunLogs(name string, runs int) string {
	c.t.Helper()
	var id string
	c.waitFor(fmt.Sprintf("%s's run %d to end", name, runs), func() bool {
		a := c.agent(name)
		if len(a.Runs) < runs || a.Runs[0].EndedAt == nil {
			return false
		}
		id = a.Runs[0].ID
		return true
	})
	return c.ok("logs", id)
}

// Gates in daemon runs, with the mock (issue 43): in phase plan of the
// example skill a write is refused with the phase's reason (a gate event
// in the transcript, the file not written, the next step reads the
// reason) while the plan artifact may be written; in phase verify a
// command its allow list lacks is refused and an allowed one that ran is
// observed with its exit status, as the phase's evidence.
func TestE2EGatesOfTheMock(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon()
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	c.ok("new", "alice", "--backend", "mock", "--config", mockConfig(t,
		map[string]any{"write": "main.go", "content": "package main\n", "when": map[string]any{"text": "plan"}},
		map[string]any{"text": "the gate said: {{last.error}}", "when": map[string]any{"text": "plan"}},
		map[string]any{"write": filepath.Join(dir, "1_IMPLEMENT_PLAN.md"), "content": "the plan", "when": map[string]any{"text": "plan"}},
		map[string]any{"shell": "touch verified", "when": map[string]any{"text": "verify"}},
		// Allowed by verify's "shell:cd *" (go vet needs a build cache the
		// run's sandbox may not grant).
		map[string]any{"shell": "cd .", "when": map[string]any{"text": "verify"}},
		map[string]any{"result": "done"}))
	db, e := startEffortE2E(t, c, "alice", dir, 0)

	c.ok("send", "alice", "plan it")
	logs := c.lastRunLogs("alice", 1)
	const reason = "phase plan of skill implement does not allow write_file: write_file is denied by \"write_file\""
	if !strings.Contains(logs, "gate        "+reason) {
		t.Errorf("the transcript lacks the gate event with the phase's reason:\n%s", logs)
	}
	if !strings.Contains(logs, "the gate said: "+reason) {
		t.Errorf("the script's next step did not read the refusal:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
		t.Error("main.go was written in phase plan")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "1_IMPLEMENT_PLAN.md")); err != nil || string(b) != "the plan" {
		t.Errorf("the plan artifact = %q, %v; want it written in phase plan", b, err)
	}
	obs, err := db.Observations(t.Context(), e.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := observed(obs); !slicesEqual(got, []string{"file 1_IMPLEMENT_PLAN.md", "tool write_file"}) {
		t.Errorf("plan's observations = %q, want the plan written (a refused call is none)", got)
	}

	for e.Phase < 3 {
		if e, err = db.AdvanceEffort(t.Context(), store.Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: fmt.Sprint("n", e.Phase+1)}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("send", "alice", "verify it")
	logs = c.lastRunLogs("alice", 2)
	if !strings.Contains(logs, "phase verify of skill implement does not allow shell `touch verified`") {
		t.Errorf("verify's refusal of touch is not in the transcript:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "verified")); err == nil {
		t.Error("a refused shell step ran")
	}
	obs, err = db.Observations(t.Context(), e.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := observed(obs), []string{"shell cd . exit 0", "tool shell"}; !slicesEqual(got, want) {
		t.Errorf("verify's observations = %q, want %q", got, want)
	}
}

// The sdk backend under the gate, against the scripted model: the
// model's write_file in phase plan is refused, the refusal is what the
// model reads next, the file is not written and the transcript shows the
// gate event; its run_shell in the same phase runs and is observed with
// its exit status.
func TestE2EGatesOfTheSDKBackend(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	m := startModel(t, false)
	c.startModelDaemon(m)
	m.add(t, modelTurn{"Tools": []map[string]any{{"Name": "write_file", "Args": map[string]any{"path": "main.go", "content": "package main\n"}}}})
	m.add(t, modelTurn{"Tools": []map[string]any{{"Name": "run_shell", "Args": map[string]any{"command": "echo planning; exit 4"}}}})
	m.add(t, modelTurn{"Text": "I will plan first"})
	c.ok("new", "dev", "--backend", "sdk", "--model", "anthropic/claude-sonnet-4-5")
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "dev")
	db, e := startEffortE2E(t, c, "dev", dir, 0)

	c.ok("send", "dev", "plan the change")
	logs := c.lastRunLogs("dev", 1)
	const reason = "phase plan of skill implement does not allow write_file"
	if !strings.Contains(logs, "gate        "+reason) {
		t.Errorf("the transcript lacks the gate event:\n%s", logs)
	}
	reqs := m.requests(t)
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	if body := string(reqs[1].RawBody); !strings.Contains(body, reason) {
		t.Errorf("the model's next request lacks the refusal:\n%s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
		t.Error("main.go was written in phase plan")
	}
	obs, err := db.Observations(t.Context(), e.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := observed(obs), []string{"shell echo planning; exit 4 exit 4"}; !slicesEqual(got, want) {
		t.Errorf("observations = %q, want %q (a failed call is no tool observation)", got, want)
	}
}

// observed renders observations for a comparison.
func observed(obs []store.Observation) []string {
	var out []string
	for _, o := range obs {
		s := string(o.Kind) + " " + o.Subject
		if o.Exit != nil {
			s += fmt.Sprintf(" exit %d", *o.Exit)
		}
		out = append(out, s)
	}
	return out
}

func slicesEqual(a, b []string) bool {
	b2, _ := json.Marshal(b)
	a2, _ := json.Marshal(a)
	return string(a2) == string(b2)
}
