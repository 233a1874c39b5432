package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/runspec"
	warmspares "github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// tripwire is a shell script that appends the path it was executed as
// ($0: the file the kernel exec'd, whatever argv[0] says) to mark, then
// waits without ever doing the plugin handshake. pad lengthens it with a
// comment to exactly size bytes when size is larger.
func tripwire(t testing.TB, mark string, size int) []byte {
	t.Helper()
	b := []byte("#!/bin/sh\necho \"$0\" >> '" + mark + "'\nexec sleep 60\n")
	if n := size - len(b); n > 1 {
		b = append(b, '#')
		b = append(b, bytes.Repeat([]byte{'x'}, n-2)...)
		b = append(b, '\n')
	}
	return b
}

// marks returns the lines a tripwire wrote: one per execution.
func marks(t testing.TB, mark string) []string {
	t.Helper()
	b, err := os.ReadFile(mark)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func sha256Hex(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// serve runs agent once through the daemon (the scheduler, the
// supervisor, a real plugin process) and returns its result.
func serve(th *testHost, agent string) (string, error) {
	res, err := th.client().Serve(context.Background(), api.RunRequest{Agent: agent, Message: "go"})
	return res.Content, err
}

// A plugin binary swapped after the daemon verified it, written over in
// place or renamed into place, is never executed from the plugins
// directory: while the catalog is still examining the new bytes, runs
// execute the verified copy of the old ones, and once the new bytes prove
// not to be a plugin, runs are refused. The new bytes were executed once,
// by the examination, and from a verified copy.
func TestSwappedPluginBinaryNeverRunsUnverified(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, bin, dir string, b []byte){
		"written in place": func(t *testing.T, bin, dir string, b []byte) {
			// Fails with ETXTBSY if any process executes bin itself (the
			// warm spare did before the daemon ran verified copies).
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"renamed into place": func(t *testing.T, bin, dir string, b []byte) {
			testkit.Install(t, writeScript(t, string(b)), dir, filepath.Base(bin))
		},
	}
	for name, swap := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			th, dir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.Scheduler.Attempts = 1 })
			bin := testkit.Install(t, testkit.Build(t, "host/testdata/plugins/echo", "-X main.version=1.0.0"), dir, "agent-worker-backend-echo")
			ps := waitPlugins(t, th, "echo 1.0.0", func(ps []api.Plugin) bool { p := find(ps, "echo"); return p != nil && p.Version == "1.0.0" })
			verified := find(ps, "echo").ExecPath
			if _, err := th.client().CreateAgent(context.Background(), api.AgentSpec{Name: "alice", Backend: "echo"}); err != nil {
				t.Fatal(err)
			}
			if got, err := serve(th, "alice"); err != nil || got != "echo 1.0.0 for alice" {
				t.Fatalf("run before the swap: %q, %v", got, err)
			}
			testkit.WaitFor(t, "echo's warm spare", func() bool { return len(spares(t, th)) == 1 })

			mark := filepath.Join(t.TempDir(), "executed")
			swap(t, bin, dir, tripwire(t, mark, 0))
			// The catalog has started examining the new bytes (that is
			// the one execution the tripwire records) and, since they
			// never answer, keeps the verified old ones for the plugin
			// timeout: runs meanwhile must execute those.
			testkit.WaitFor(t, "the catalog to examine the new bytes", func() bool { return len(marks(t, mark)) == 1 })
			for i := range 2 { // the spare, then the one started to replace it
				if got, err := serve(th, "alice"); err != nil || got != "echo 1.0.0 for alice" {
					t.Errorf("run %d after the swap: %q, %v; want the verified 1.0.0", i+1, got, err)
				}
			}
			ps = waitPlugins(t, th, "echo broken", func(ps []api.Plugin) bool { p := find(ps, "echo"); return p != nil && p.Error != "" })
			if _, err := serve(th, "alice"); err == nil || !strings.Contains(err.Error(), "cannot be used") {
				t.Errorf("run once the new bytes are known broken: %v, want refused", err)
			}
			got := marks(t, mark)
			want := filepath.Join(catalog.VerifiedDir(th.home), find(ps, "echo").SHA256)
			if len(got) != 1 || got[0] != want {
				t.Errorf("the new bytes were executed as %q; want once, as the verified copy %s", got, want)
			}
			if filepath.Dir(verified) != catalog.VerifiedDir(th.home) || verified == want {
				t.Errorf("echo 1.0.0 ran from %s", verified)
			}
		})
	}
}

// Every plugin process executes the daemon's copy of the bytes it hashed:
// a file named by its sha256, mode 0500, in a directory only the daemon's
// user can enter; runs and spares record it as what they execute.
func TestPluginsRunFromAPrivateVerifiedCopy(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	ps := waitPlugins(t, th, "the mock", func(ps []api.Plugin) bool { p := find(ps, "mock"); return p != nil && p.Error == "" })
	mock := find(ps, "mock")
	vdir := catalog.VerifiedDir(th.home)
	if want := filepath.Join(vdir, mock.SHA256); mock.ExecPath != want {
		t.Fatalf("mock runs %q, want %q", mock.ExecPath, want)
	}
	st, err := os.Lstat(mock.ExecPath)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o500 {
		t.Errorf("verified copy: %v, %v; want a regular file, mode 0500", st.Mode(), err)
	}
	if st, err := os.Lstat(vdir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("verified copies dir: %v, %v; want a directory, mode 0700", st.Mode(), err)
	}
	if got := sha256Hex(t, mock.ExecPath); got != mock.SHA256 {
		t.Errorf("verified copy holds sha256 %s, want %s", got, mock.SHA256)
	}
	alice := pidAgent(t, th, "alice")
	cold, _, _ := runOnce(t, th, alice)
	spare := waitSpare(t, th, cold)
	if spare.PluginPath != mock.ExecPath || !runner.IsPluginProcess(spare.PID, mock.ExecPath) {
		t.Errorf("spare %d records %s; want it to execute %s", spare.PID, spare.PluginPath, mock.ExecPath)
	}
	if !runsPlugin(spare.PID, filepath.Join(dir, "agent-worker-backend-mock")) {
		t.Errorf("spare %d is not named after its plugin file", spare.PID)
	}
	if ents, err := os.ReadDir(vdir); err != nil || len(ents) != 1 {
		t.Errorf("verified copies: %d files, %v; want the mock's only", len(ents), err)
	}
}

// A verified copy changed after the daemon wrote it is refused: the run
// fails with an error that says so, the altered bytes never execute, and
// the daemon verifies the plugin again, after which runs work.
func TestTamperedVerifiedCopyIsRefused(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, exe string, b []byte){
		// Same size, mtime set back, mode restored: only the ctime tells.
		"rewritten in place": func(t *testing.T, exe string, b []byte) {
			st, err := os.Stat(exe)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(exe, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(exe, b, 0o500); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(exe, 0o500); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(exe, time.Time{}, st.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by rename": func(t *testing.T, exe string, b []byte) {
			tmp := exe + ".evil"
			if err := os.WriteFile(tmp, b, 0o500); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, exe); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, exe string, b []byte) {
			if err := os.Remove(exe); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, tamper := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// No spares: every run starts a process, so each one meets the copy.
			off := warmspares.Counts{}
			th, _ := pluginHost(t, runner.SupervisorConfig{Spares: &off}, func(c *Config) { c.Scheduler.Attempts = 1 })
			mockAgent(t, th, "alice", map[string]any{"result": "ok"})
			if got, err := serve(th, "alice"); err != nil || got != "ok" {
				t.Fatalf("run before tampering: %q, %v", got, err)
			}
			ps := waitPlugins(t, th, "the mock", func(ps []api.Plugin) bool { return find(ps, "mock") != nil })
			mock := find(ps, "mock")
			st, err := os.Stat(mock.ExecPath)
			if err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(t.TempDir(), "executed")
			tamper(t, mock.ExecPath, tripwire(t, mark, int(st.Size())))

			_, err = serve(th, "alice")
			if err == nil || !strings.Contains(err.Error(), "verified copy") {
				t.Fatalf("run after tampering: %v; want it refused", err)
			}
			if r := lastRun(t, th, "alice"); r.State != "failed" || !strings.Contains(r.Error, "refused to start backend plugin \"mock\"") {
				t.Errorf("run record %s: %q", r.State, r.Error)
			}
			// The failed run failed the agent (one attempt); its next runs
			// go through the supervisor, as the scheduler's retries would.
			a, err := th.DB().GetAgent(context.Background(), store.AgentKey{Name: "alice", Workflow: "global", Tag: "main"})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				out, err := th.sup.Run(context.Background(), runspec.RunSpec{Agent: a, Attempt: 1})
				if err == nil && out.Result == "ok" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("runs never worked again after the copy was verified anew: %v", err)
				}
				select {
				case <-th.catalog.Changed():
				case <-time.After(100 * time.Millisecond):
				}
			}
			if m := marks(t, mark); len(m) != 0 {
				t.Errorf("the tampered copy was executed: %q", m)
			}
			if got := sha256Hex(t, mock.ExecPath); got != mock.SHA256 {
				t.Errorf("the copy holds %s after re-verification, want %s", got, mock.SHA256)
			}
		})
	}
}
