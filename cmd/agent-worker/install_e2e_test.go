package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// `go install …/cmd/...` is the whole installation: with nothing else (a
// fresh HOME, no plugins folder, no checkout on PATH) the daemon finds the
// first-party plugins beside its own executable, an agent answers, and a
// backend whose plugin is not there is refused at `new` with where the
// daemon looked and how to install it.
func TestE2EGoInstallIsTheWholeInstallation(t *testing.T) {
	t.Parallel()
	gobin := t.TempDir()
	root := filepath.Join("..", "..")
	install := exec.Command("go", "install", "./cmd/...")
	// buildvcs: as `go install` in a checkout does by default, whatever
	// this machine's GOFLAGS say.
	install.Dir, install.Env = root, append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-buildvcs=auto")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/...: %v\n%s", err, out)
	}
	// Only what users run: the CLI and the plugins, not the developer
	// tools (internal/cmd).
	installed, err := os.ReadDir(gobin)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range installed {
		if n := e.Name(); n != "agent-worker" && !strings.HasPrefix(n, "agent-worker-backend-") && !strings.HasPrefix(n, "agent-worker-docs-") {
			t.Errorf("go install ./cmd/... installed %s, which is neither the CLI nor a plugin", n)
		}
	}
	if err := os.Remove(filepath.Join(gobin, "agent-worker-backend-codex")); err != nil {
		t.Fatalf("go install ./cmd/... installed no codex plugin: %v", err)
	}
	home := t.TempDir()
	c := &cli{t: t, home: filepath.Join(home, ".agent-worker"), exe: filepath.Join(gobin, "agent-worker"),
		fixedEnv: []string{"HOME=" + home, "PATH=" + gobin + ":/usr/bin:/bin", "AGENT_WORKER_LISTEN=127.0.0.1:0"}}
	t.Cleanup(c.stopDaemon)

	c.ok("new", "m", "--backend", "mock")
	if out := c.ok("ask", "m", "hi"); !strings.HasSuffix(out, "] [m] Processed: user: m hi\nm done.\n") {
		t.Errorf("ask m hi printed %q, want the mock's answer", out)
	}

	r := c.run("new", "x", "--backend", "codex")
	for _, want := range []string{`backend "codex" is not installed`, gobin, filepath.Join(c.home, "plugins.d"),
		"go install github.com/agent-worker/agent-worker/cmd/agent-worker-backend-codex@latest"} {
		if r.code != api.ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("new --backend codex without its plugin: exit %d, stderr %q; want exit %d saying %q", r.code, r.stderr, api.ExitUsage, want)
		}
	}
	if r := c.run("info", "x"); r.code != api.ExitNotFound {
		t.Errorf("the refused agent was registered: info x exit %d\n%s", r.code, r.stdout)
	}

	var l api.PluginList
	if err := json.Unmarshal([]byte(c.ok("plugins", "--json")), &l); err != nil {
		t.Fatalf("plugins --json: %v", err)
	}
	found := map[string]string{}
	for _, p := range l.Plugins {
		found[p.Kind+"/"+p.Name] = p.Path
	}
	for _, name := range []string{"backend/mock", "backend/claude", "backend/sdk", "docs/postgres"} {
		if filepath.Dir(found[name]) != gobin {
			t.Errorf("plugin %s found at %q, want beside agent-worker in %s (all: %v)", name, found[name], gobin, found)
		}
	}
	// Nothing is made beside the executable; the home's drop folder is.
	if _, err := os.Stat(filepath.Join(gobin, "plugins.d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the daemon made a plugins.d beside its executable: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(c.home, "plugins.d")); err != nil || !fi.IsDir() {
		t.Errorf("the home's plugins.d was not made: %v", err)
	}

	version := c.ok("--version")
	for _, want := range []string{"agent-worker ", "\ncommit:  ", "\nbuilt:   ", "\ngo:      go1."} {
		if !strings.Contains(version, want) {
			t.Errorf("--version printed %q, want a line %q", version, want)
		}
	}
	// The commit is the one go stamped into the build info (it stamps
	// none in a git worktree, whose .git is a file).
	info, err := exec.Command("go", "version", "-m", c.exe).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	_, rest, stamped := strings.Cut(string(info), "vcs.revision=")
	if !stamped {
		t.Logf("not checking --version's commit: go stamped no vcs.revision into the build")
		return
	}
	if want := "commit:  " + strings.Fields(rest)[0]; !strings.Contains(version, want) {
		t.Errorf("--version printed %q, want %q", version, want)
	}
}
