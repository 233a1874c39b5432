package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// smallSkill has no evidence, so a scripted agent can walk it to the end
// without the gate observing anything.
const smallSkill = `---
name: small
description: plan, then verify
phases:
  - name: plan
    instructions: Write the plan.
    proof: {plan_summary: string}
  - name: verify
    instructions: Check it.
    proof: {tests_run: int}
---
# Small
`

// A mock agent walks efforts through the daemon's MCP tools (issue 43):
// a proof of the wrong type, a skipped phase and a replayed token are
// refused, effort_log writes 1_SMALL_LOG.md, the effort finishes; effort
// 2 on the same directory is #2 and gets effort 1's debrief; test-first
// does not end without its evidence; and after the daemon is SIGKILLed,
// the effort is still at its phase and the next run's prompt names the
// phase and the notes.
func TestE2EEfforts(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	skills := filepath.Join(c.home, ".agent-worker", "skills")
	for name, content := range map[string]string{"small": smallSkill} {
		if err := os.MkdirAll(filepath.Join(skills, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(skills, name, "SKILL.md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	example, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(skills, "implement"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "implement", "SKILL.md"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	one := map[string]any{"text": "one"}
	two := map[string]any{"text": "two"}
	tool := func(when map[string]any, name string, args map[string]any) map[string]any {
		return map[string]any{"tool": name, "args": args, "when": when}
	}
	daemon := c.startDaemon()
	c.ok("new", "alice", "--backend", "mock", "--config", mockConfig(t,
		tool(one, "effort_start", map[string]any{"dir": dir, "skill": "small"}),                                                                             // 1
		tool(one, "effort_continue", map[string]any{"token": "{{step.1.token}}", "proof": map[string]any{"plan_summary": 3}}),                               // 2: wrong type
		tool(one, "effort_finish", map[string]any{"token": "{{step.1.token}}"}),                                                                             // 3: skips verify
		tool(one, "effort_continue", map[string]any{"token": "{{step.1.token}}", "proof": map[string]any{"plan_summary": "p"}}),                             // 4
		tool(one, "effort_continue", map[string]any{"token": "{{step.1.token}}", "proof": map[string]any{"plan_summary": "p"}}),                             // 5: replayed
		tool(one, "effort_log", map[string]any{"text": "chose the small way"}),                                                                              // 6
		tool(one, "effort_continue", map[string]any{"token": "{{step.4.token}}", "proof": map[string]any{"tests_run": 2}, "notes": "debrief of one"}),       // 7
		tool(two, "effort_start", map[string]any{"dir": dir, "skill": "implement"}),                                                                         // 8
		tool(two, "effort_continue", map[string]any{"token": "{{step.8.token}}", "proof": map[string]any{"plan_summary": "p2"}, "notes": "plan two noted"}), // 9
		tool(two, "effort_continue", map[string]any{"token": "{{step.9.token}}", "proof": map[string]any{"failing_test": "TestX"}}),                         // 10: no evidence
		map[string]any{"result": "done"}))

	var res api.RunResult
	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "one")), &res); err != nil {
		t.Fatal(err)
	}
	logs := c.ok("logs", res.RunID)
	for _, want := range []string{
		"proof: plan_summary must be a string",
		"phases are walked in order",
		"already used: the effort is at phase 2 of 2, verify",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("run one's logs lack %q:\n%s", want, logs)
		}
	}
	var shown api.EffortShow
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "effort-1", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.State != "finished" || shown.Ordinal != 1 || shown.History[len(shown.History)-1].Notes != "debrief of one" {
		t.Errorf("effort 1 = %+v", shown)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "1_SMALL_LOG.md")); err != nil || !strings.Contains(string(b), "Z chose the small way\n") {
		t.Errorf("1_SMALL_LOG.md = %q, %v", b, err)
	}

	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "two")), &res); err != nil {
		t.Fatal(err)
	}
	logs = c.ok("logs", res.RunID, "--json")
	for _, want := range []string{"#2 on " + dir, "what effort 1 (small) left", "debrief of one", "none was observed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("run two's logs lack %q", want)
		}
	}

	// The daemon dies mid-phase; the next one finds the effort where it
	// was, and the next run's prompt says so.
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "--agent", "alice@global", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.ID != "effort-2" || shown.Ordinal != 2 || shown.State != "active" || shown.Phase != 2 || shown.PhaseName != "test-first" {
		t.Errorf("after the kill: %+v", shown.EffortRow)
	}
	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "three")), &res); err != nil {
		t.Fatal(err)
	}
	logs = c.ok("logs", res.RunID, "--json")
	for _, want := range []string{"## Effort", "Phase 2 of 4: test-first", "plan two noted", "you were here"} {
		if !strings.Contains(logs, want) {
			t.Errorf("run three's prompt lacks %q:\n%s", want, logs)
		}
	}
}
