package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A planner on the mock backend spawns a helper at the kickoff and
// mentions it; the helper answers, and list and info say who spawned it.
func TestE2EPlannerSpawnsAHelper(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "crew.yaml")
	team := `name: crew
agents:
  planner:
    backend: mock
    can_spawn: true
    max_spawned: 1
    config:
      script:
        - tool: agent_spawn
          args: {name: scout, system_prompt: "You look things up.", backend: mock}
          when: {from: system}
        - tool: agent_spawn
          args: {name: second, system_prompt: "One too many."}
          when: {from: system}
        - reply: "@scout please look up the docs"
          when: {from: system}
kickoff: "@planner get help"
`
	if err := os.WriteFile(file, []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.ok("run", file, "--timeout", "60s")
	for _, want := range []string{"planner spawned scout (mock)", "[scout] Processed: planner: scout please look up the docs"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	if list := c.ok("list"); !strings.Contains(list, "scout (spawned by planner)") || strings.Contains(list, "second") {
		t.Errorf("list:\n%s", list)
	}
	if info := c.ok("info", "scout@crew"); !strings.Contains(info, "spawned by: planner") {
		t.Errorf("info scout@crew:\n%s", info)
	}
	if info := c.ok("info", "planner@crew"); !strings.Contains(info, "up to 1 live agents (agent_spawn, agent_stop)") {
		t.Errorf("info planner@crew:\n%s", info)
	}
	// The refused second spawn is in the planner's transcript.
	run := regexp.MustCompile(`run_[0-9a-f]{16}`).FindString(c.ok("runs", "planner@crew"))
	if logs := c.ok("logs", run); !strings.Contains(logs, "planner already has 1 live spawned agent(s), its max_spawned") {
		t.Errorf("logs %s:\n%s", run, logs)
	}
}
