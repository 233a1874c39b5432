package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// A run cannot reach the daemon's secrets (issue 11, B.1): a mock run's
// shell prints its environment and tries to read daemon.json where the old
// working directory (the daemon's home) had it. The daemon's own variables
// stay out, the allow-listed ones and the agent's env: get in, and the run
// works in a directory of its own that holds no credential.
func TestE2ERunSeesNoDaemonSecrets(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	userHome := t.TempDir() // the daemon's HOME is not its agent-worker home
	c.startDaemon("HOME="+userHome,
		"AW_CANARY_SECRET=canary-5d1e", "AGENT_WORKER_CANARY=canary-9b2c",
		"ANTHROPIC_BASE_URL=http://daemon-base.example", "HTTPS_PROXY=http://daemon-proxy.example:3128",
		"OPENAI_BASE_URL=http://daemon-openai.example")
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil || d.Token == "" {
		t.Fatalf("daemon.json: %+v, %v", d, err)
	}

	probe := `echo "cwd=$(pwd -P)"; env; ` +
		`for f in daemon.json ../daemon.json ../../daemon.json "$AGENT_WORKER_HOME/daemon.json" "$HOME/daemon.json" "$HOME/.agent-worker/daemon.json"; do ` +
		`cat "$f" 2>/dev/null && echo "READ $f"; done; ` +
		`find . -type f -exec cat {} + 2>/dev/null; true`
	cfg, _ := json.Marshal(map[string]any{
		"env":    map[string]string{"AGENT_SET": "from-agent-env", "OPENAI_BASE_URL": "http://agent-openai.example"},
		"script": []map[string]any{{"shell": probe}, {"result": "probed"}},
	})
	c.ok("new", "probe", "--backend", "mock", "--config", string(cfg))
	// The first run starts its process cold; the second takes the warm
	// spare, started before anyone knew whose run it would serve.
	for range 2 {
		probeRun(t, c, d)
	}
	c.waitFor("plugins to show the spare used", func() bool { return strings.Contains(c.ok("plugins"), "1 live, 1/2 used, 1 cold") })
}

// probeRun asks the probe agent and checks what its run could see.
func probeRun(t *testing.T, c *cli, d api.DaemonInfo) {
	out := c.ok("ask", "probe", "show me your environment")

	for _, want := range []string{
		"AGENT_SET=from-agent-env",                      // the agent's env:
		"OPENAI_BASE_URL=http://agent-openai.example",   // ... wins over the daemon's
		"ANTHROPIC_BASE_URL=http://daemon-base.example", // a base URL the user set for the daemon
		"HTTPS_PROXY=http://daemon-proxy.example:3128",  // and a proxy
		"PATH=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's environment lacks %s:\n%s", want, out)
		}
	}
	for what, leak := range map[string]string{
		"a secret in the daemon's environment": "canary-5d1e", "the daemon's AGENT_WORKER_* settings": "canary-9b2c",
		"the daemon's home variable": "AGENT_WORKER_HOME=", "the daemon's OPENAI_BASE_URL over the agent's": "daemon-openai",
		"the admin token": d.Token, "daemon.json": "READ ",
	} {
		if strings.Contains(out, leak) {
			t.Errorf("the run saw %s (%q):\n%s", what, leak, out)
		}
	}
	home := realPath(t, c.home)
	wantDir := filepath.Join(home, "workspaces", "global", "main", "probe")
	if !strings.Contains(out, "cwd="+wantDir+"\n") {
		t.Errorf("the run did not work in its own workspace %s:\n%s", wantDir, out)
	}
	if entries, err := os.ReadDir(wantDir); err != nil || len(entries) != 0 {
		t.Errorf("the workspace holds %v (%v); want it empty, with no daemon state", entries, err)
	}
}
