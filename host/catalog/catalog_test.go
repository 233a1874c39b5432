package catalog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

// Socket directories that a daemon killed with its plugins left behind
// are removed when the next daemon starts; those of a daemon that still
// runs, and anything not ours, are left alone.
func TestStaleSocketDirsRemovedAtStart(t *testing.T) {
	t.Parallel()
	runtime := testkit.ShortTempDir(t)
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	live := testkit.StartDetached(t, "/bin/sleep", "60")
	mk := func(name string) string {
		p := filepath.Join(runtime, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "plugin123"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{
		mk("aw-" + strconv.Itoa(dead) + "-run-123456"),
		mk("aw-" + strconv.Itoa(dead) + "-fp-99"),
		mk("aw-" + strconv.Itoa(os.Getpid()) + "-docs-42"), // our pid, not ours: a previous daemon's
	}
	kept := []string{
		mk("aw-" + strconv.Itoa(live) + "-run-7"),
		mk("aw-" + strconv.Itoa(dead) + "-other-1"),
		mk("unrelated"),
	}
	inUse, err := MakeSocketDir(runtime, "run") // another host in this process
	if err != nil {
		t.Fatal(err)
	}
	defer RemoveSocketDir(inUse)
	kept = append(kept, inUse)

	CleanSocketDirs(runtime, hclog.NewNullLogger())
	for _, d := range stale {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("stale %s still there (%v)", filepath.Base(d), err)
		}
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(d), err)
		}
	}
}

// The allowlist keeps what backends and the network need and drops the
// daemon's own settings and anything else it was started with.
func TestPluginEnvAllowlist(t *testing.T) {
	t.Parallel()
	for name, kept := range map[string]bool{
		"PATH": true, "HOME": true, "LANG": true, "LC_ALL": true, "TZ": true, "SSL_CERT_FILE": true,
		"HTTPS_PROXY": true, "no_proxy": true, "ANTHROPIC_API_KEY": true, "ANTHROPIC_BASE_URL": true,
		"OPENAI_BASE_URL": true, "GROQ_API_KEY": true, "CLAUDE_CONFIG_DIR": true, "CODEX_HOME": true, "CURSOR_API_KEY": true,
		"XDG_CONFIG_HOME": true, "GORACE": true, "AGENT_WORKER_HOME": false, "AGENT_WORKER_TOKEN": false, "AGENT_WORKER_LISTEN": false, "AWS_SECRET_ACCESS_KEY": false,
		"GITHUB_TOKEN": false, "DATABASE_URL": false, "PWD": false, "OLDPWD": false, "LD_PRELOAD": false,
	} {
		if got := InEnv(name); got != kept {
			t.Errorf("InEnv(%s) = %v, want %v", name, got, kept)
		}
	}
}
