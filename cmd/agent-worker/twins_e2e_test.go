package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// With every first-party plugin in two plugin folders (one shadowing the
// other), a daemon started again runs each agent's first run at its first
// attempt: no run fails on a verified copy rewritten under it (issue 27,
// item 8).
func TestE2ESamePluginsInTwoFoldersAfterARestart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	shadowed := filepath.Join(c.home, "plugins.d")
	if err := os.MkdirAll(shadowed, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(pluginsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(pluginsDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shadowed, f.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agents := []string{"a1", "a2", "a3", "a4"}
	for _, a := range agents {
		c.ok("new", a, "--backend", "mock", "--config", mockConfig(t, map[string]any{"result": "ok from " + a}))
	}
	if out := c.ok("plugins"); !strings.Contains(out, "shadowed") {
		t.Errorf("plugins does not show the second folder's copies as shadowed:\n%s", out)
	}
	for range 2 { // a fresh daemon, then one started again over its copies
		c.ok("stop", "--all")
		for _, a := range agents {
			c.ok("send", a, "hello") // starts the daemon again
		}
		c.waitFor("every agent's reply", func() bool {
			peek := c.ok("peek", "-n", "100")
			for _, a := range agents {
				if strings.Count(peek, "["+a+"] ok from "+a) < 1 {
					return false
				}
			}
			return true
		})
		var l api.RunList
		if err := json.Unmarshal([]byte(c.ok("runs", "--json", "-n", "100")), &l); err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Runs {
			if r.State != api.RunSucceeded && r.State != api.RunRunning {
				t.Errorf("run %s of %s: %s (%s)", r.ID, r.Agent, r.State, r.Error)
			}
		}
	}
}
