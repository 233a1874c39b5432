package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The daemon keeps an address only when the user chose one: by --listen,
// AGENT_WORKER_LISTEN or its --config file's listen. An empty variable is
// no choice (a session's `env AGENT_WORKER_LISTEN=`), so such a daemon
// takes a free port when the default is in use.
func TestListenChosen(t *testing.T) {
	dir := t.TempDir()
	withListen, without := filepath.Join(dir, "listen.yaml"), filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(withListen, []byte("listen: 127.0.0.1:6000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(without, []byte("log-level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args   []string
		env    string
		chosen bool
	}{
		"nothing":               {},
		"empty variable":        {env: ""},
		"flag":                  {args: []string{"--listen", "127.0.0.1:0"}, chosen: true},
		"flag with the default": {args: []string{"--listen", "127.0.0.1:5099"}, chosen: true},
		"variable":              {env: "127.0.0.1:6000", chosen: true},
		"config listen":         {args: []string{"--config", withListen}, chosen: true},
		"config without listen": {args: []string{"--config", without}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("AGENT_WORKER_LISTEN", tc.env)
			cmd := daemonCmd(&env{stdout: io.Discard, stderr: io.Discard})
			if err := cmd.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := flagSet(cmd.FlagSet, "listen"); got != tc.chosen {
				t.Errorf("daemon %v with AGENT_WORKER_LISTEN=%q: chosen %v, want %v", tc.args, tc.env, got, tc.chosen)
			}
		})
	}
}
