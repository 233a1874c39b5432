package workflow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// TestSandbox: what a good sandbox: parses to, with its paths made
// absolute against the workflow file's folder and the user's home.
func TestSandbox(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("the parser expands ~ with os.UserHomeDir: %v", err)
	}
	tests := map[string]struct {
		sandbox string // the agent's sandbox: value; "" leaves the key out
		want    func(dir string) *backend.SandboxConfig
	}{
		"absent is nil": {"", func(string) *backend.SandboxConfig { return nil }},
		"null is nil":   {"null", func(string) *backend.SandboxConfig { return nil }},
		"empty":         {"{}", func(string) *backend.SandboxConfig { return &backend.SandboxConfig{} }},
		"relative paths": {"{read: [data, ./a/../b/, .], write: [out]}", func(dir string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Read: []string{filepath.Join(dir, "data"), filepath.Join(dir, "b"), dir}, Write: []string{filepath.Join(dir, "out")}}
		}},
		"home": {"{read: [~, ~/.cache/go-build/, '~/x/../y'], write: ['~']}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Read: []string{home, filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "y")}, Write: []string{home}}
		}},
		"absolute, cleaned, once each": {"{write: [/srv//cache/, /srv/cache, /tmp/../var]}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Write: []string{"/srv/cache", "/var"}}
		}},
		"network none": {"{network: none}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Network: &backend.SandboxNetwork{}}
		}},
		"network all": {"{network: all}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Network: &backend.SandboxNetwork{All: true}}
		}},
		"ports, once each": {"{network: [443, 8080, 443, 1, 65535]}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Network: &backend.SandboxNetwork{Ports: []uint16{443, 8080, 1, 65535}}}
		}},
		"no ports is none": {"{network: []}", func(string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Network: &backend.SandboxNetwork{}}
		}},
		"mode on":  {"{mode: on}", func(string) *backend.SandboxConfig { return &backend.SandboxConfig{Mode: backend.SandboxOn} }},
		"mode off": {"{mode: off}", func(string) *backend.SandboxConfig { return &backend.SandboxConfig{Mode: backend.SandboxOff} }},
		"block style": {"\n      read: [in]\n      write:\n        - out\n      network: [443]\n      mode: on", func(dir string) *backend.SandboxConfig {
			return &backend.SandboxConfig{Read: []string{filepath.Join(dir, "in")}, Write: []string{filepath.Join(dir, "out")},
				Network: &backend.SandboxNetwork{Ports: []uint16{443}}, Mode: backend.SandboxOn}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := "agents:\n  a:\n    backend: mock\n"
			if tc.sandbox != "" {
				src += "    sandbox: " + tc.sandbox + "\n"
			}
			f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(dir)
			if diff := cmp.Diff(want, f.Agents[0].Sandbox); diff != "" {
				t.Errorf("Sandbox (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, f.Agents[0].BackendConfig().Sandbox); diff != "" {
				t.Errorf("BackendConfig().Sandbox, what the daemon stores (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSandboxProblems: each mistake is placed and says what to write.
func TestSandboxProblems(t *testing.T) {
	t.Parallel()
	const agent = "agents:\n  a:\n    backend: mock\n"
	tests := map[string]struct{ src, want string }{
		"typo of a key": {agent + "    sandbox:\n      reed: [x]\n",
			`wf.yaml:5:7: unknown key "reed" in sandbox of agent a: did you mean read?`},
		"unknown key": {agent + "    sandbox: {paths: [x]}\n",
			`wf.yaml:4:15: unknown key "paths" in sandbox of agent a: known keys are read, write, network, mode`},
		"duplicate key": {agent + "    sandbox: {read: [x], read: [y]}\n",
			`wf.yaml:4:26: duplicate key "read" in sandbox of agent a (first at line 4): remove one`},
		"not a map": {agent + "    sandbox: read-only\n",
			"wf.yaml:4:14: sandbox must be a map, e.g. sandbox: {read: [~/.cache/go-build], write: [./out], network: [443], mode: on} (codex's own sandbox mode goes in config: {sandbox_mode: read-only})"},
		"a list": {agent + "    sandbox: [/data]\n", "wf.yaml:4:14: sandbox must be a map, e.g. sandbox: {read:"},
		"paths not a list": {agent + "    sandbox: {write: /data}\n",
			"wf.yaml:4:22: sandbox write must be a list of paths, e.g. write: [./data, ~/.cache]"},
		"path a map": {agent + "    sandbox: {read: [/a, {b: c}]}\n",
			"wf.yaml:4:26: sandbox read items must be paths, e.g. read: [./data, ~/.cache]"},
		"path a list": {agent + "    sandbox:\n      read:\n        - [/a]\n",
			"wf.yaml:6:11: sandbox read items must be paths, e.g. read: [./data, ~/.cache]"},
		"path null": {agent + "    sandbox: {read: [~/a, null]}\n",
			"wf.yaml:4:27: sandbox read items must be paths"},
		"path empty": {agent + "    sandbox: {write: ['']}\n",
			"wf.yaml:4:23: sandbox write path is empty: write a path, e.g. ./data or ~/.cache"},
		"other user's home": {agent + "    sandbox: {read: [~bob/src]}\n",
			`wf.yaml:4:22: sandbox read path "~bob/src": only your own home expands: write ~/path or an absolute path`},
		"a variable": {agent + "    sandbox: {write: [\"${{ env.OUT }}\"]}\n",
			`wf.yaml:4:23: sandbox write path "${{ env.OUT }}" takes no ${{ }} variables: write the path itself, relative to the workflow file's folder, ~/... or absolute`},
		"network word": {agent + "    sandbox: {network: some}\n",
			`wf.yaml:4:24: sandbox network "some" is not valid: write none, all or a list of TCP ports (1-65535), e.g. network: [443, 8080]`},
		"network one port": {agent + "    sandbox: {network: 443}\n",
			`wf.yaml:4:24: sandbox network "443" is not valid: write none, all or a list of TCP ports (1-65535), e.g. network: [443, 8080]`},
		"network a map": {agent + "    sandbox: {network: {all: true}}\n",
			"wf.yaml:4:24: sandbox network a map is not valid: write none, all or a list of TCP ports (1-65535)"},
		"port too high": {agent + "    sandbox: {network: [443, 70000]}\n",
			`wf.yaml:4:30: sandbox network: "70000" is not a TCP port: write none, all or a list of TCP ports (1-65535), e.g. network: [443, 8080]`},
		"port zero": {agent + "    sandbox: {network: [0]}\n",
			`wf.yaml:4:25: sandbox network: "0" is not a TCP port`},
		"port negative": {agent + "    sandbox: {network: [-1]}\n",
			`wf.yaml:4:25: sandbox network: "-1" is not a TCP port`},
		"port a word": {agent + "    sandbox:\n      network:\n        - https\n",
			`wf.yaml:6:11: sandbox network: "https" is not a TCP port`},
		"port quoted": {agent + "    sandbox: {network: ['443']}\n",
			`wf.yaml:4:25: sandbox network: "443" is not a TCP port`},
		"port fraction": {agent + "    sandbox: {network: [44.3]}\n",
			`wf.yaml:4:25: sandbox network: "44.3" is not a TCP port`},
		"mode": {agent + "    sandbox: {mode: strict}\n",
			`wf.yaml:4:21: sandbox mode "strict" is not valid: write mode: on (the default) or mode: off to run the agent unconfined`},
		"mode a boolean": {agent + "    sandbox: {mode: false}\n", `wf.yaml:4:21: sandbox mode "false" is not valid: write mode: on`},
		"mode a list":    {agent + "    sandbox: {mode: [on]}\n", "wf.yaml:4:21: sandbox mode must be a single value, not a list or map"},
		"codex mode in config": {"agents:\n  a: {backend: codex, config: {sandbox: read-only}}\n",
			`wf.yaml:2:32: config key "sandbox" clashes with the agent's own sandbox: setting: for codex's sandbox mode write config: {sandbox_mode: read-only}`},
		"policy in config": {"agents:\n  a: {backend: mock, config: {sandbox: {read: [x]}}}\n",
			`wf.yaml:2:31: config key "sandbox" clashes with the agent's own sandbox: setting: move it out of config:`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(tc.src))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error =\n%v\nwant one starting\n%s", err, tc.want)
			}
		})
	}
}

// TestSandboxReload: the daemon stores BackendConfig as JSON and, on a
// reload, takes an agent whose stored config is not Equal to the new one
// as changed. A changed sandbox must be such a change, and the same
// sandbox must survive the store unchanged.
func TestSandboxReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parse := func(sandbox string) backend.AgentConfig {
		t.Helper()
		f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte("agents:\n  a: {backend: codex, config: {sandbox_mode: read-only}"+sandbox+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return f.Agents[0].BackendConfig()
	}
	const full = ", sandbox: {read: [data, ~/.cache], write: [/tmp/out], network: [443], mode: on}"
	base := parse(full)
	b, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := backend.ParseAgentConfig(b)
	if err != nil {
		t.Fatalf("the daemon cannot read back the config it stored: %v\n%s", err, b)
	}
	if !stored.Equal(base) {
		t.Errorf("the same sandbox reads back from the store as a change:\nstored %s\nparsed %+v", b, stored)
	}
	for name, sandbox := range map[string]string{
		"no sandbox":     "",
		"another read":   ", sandbox: {read: [data, ~/.cache, more], write: [/tmp/out], network: [443], mode: on}",
		"another write":  ", sandbox: {read: [data, ~/.cache], write: [/tmp/other], network: [443], mode: on}",
		"another port":   ", sandbox: {read: [data, ~/.cache], write: [/tmp/out], network: [8443], mode: on}",
		"network all":    ", sandbox: {read: [data, ~/.cache], write: [/tmp/out], network: all, mode: on}",
		"mode off":       ", sandbox: {read: [data, ~/.cache], write: [/tmp/out], network: [443], mode: off}",
		"empty sandbox:": ", sandbox: {}",
	} {
		if parse(sandbox).Equal(stored) {
			t.Errorf("%s: a reload would not see the agent's sandbox change", name)
		}
	}
}

// TestSandboxResolve: an instance carries the file's sandbox, as a copy.
func TestSandboxResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte("agents:\n  a: {backend: mock, sandbox: {read: [data], network: [443]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Resolve(f, Vars{})
	if err != nil {
		t.Fatal(err)
	}
	want := &backend.SandboxConfig{Read: []string{filepath.Join(dir, "data")}, Network: &backend.SandboxNetwork{Ports: []uint16{443}}}
	if diff := cmp.Diff(want, in.Agents[0].Sandbox); diff != "" {
		t.Fatalf("instance sandbox (-want +got):\n%s", diff)
	}
	in.Agents[0].Sandbox.Read[0], in.Agents[0].Sandbox.Network.Ports[0] = "/elsewhere", 80
	if diff := cmp.Diff(want, f.Agents[0].Sandbox); diff != "" {
		t.Errorf("changing an instance changed the parsed file (-want +got):\n%s", diff)
	}
}
