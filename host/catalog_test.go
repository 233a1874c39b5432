package host

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// pidLines reads the pids a test script appended to file, one a line.
func pidLines(t testing.TB, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", file, b)
		}
		out = append(out, pid)
	}
	return out
}

// groupMembers lists the live (not zombie) processes of process group pgid.
func groupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	return testkit.Pids(t, func(pid int) bool { p, ok := testkit.ReadProc(pid); return ok && p.PGID == pgid })
}

// A script that never completes the handshake (it sleeps) and one that
// floods stdout (`yes`) neither freeze discovery nor leave a process:
// the good plugins are listed, the bad ones broken with the reason,
// `plugins` and `status` answer, each bad binary ran once, and a changed
// file is examined again.
func TestPluginDiscoverySurvivesHangingAndFloodingPlugins(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.PluginTimeout = 3 * time.Second })
	pids := t.TempDir()
	sleepPids, floodPids := filepath.Join(pids, "sleep"), filepath.Join(pids, "flood")
	// The shell forks sleep and yes: they keep the plugin's stdout open
	// after the shell is killed, which is what froze discovery.
	testkit.Install(t, writeScript(t, "#!/bin/sh\necho $$ >> "+sleepPids+"\nsleep 3600\n"), dir, "agent-worker-backend-sleepy")
	testkit.Install(t, writeScript(t, "#!/bin/sh\necho $$ >> "+floodPids+"\nyes\n"), dir, "agent-worker-backend-flood")
	testkit.Install(t, testkit.Build(t, "host/testdata/plugins/echo", "-X main.version=1.0.0"), dir, "agent-worker-backend-echo")

	ps := waitPlugins(t, th, "echo ready and both bad plugins broken", func(ps []api.Plugin) bool {
		e, s, f := find(ps, "echo"), find(ps, "sleepy"), find(ps, "flood")
		return e != nil && e.Error == "" && e.Version == "1.0.0" && s != nil && s.Error != "" && f != nil && f.Error != ""
	})
	if p := find(ps, "sleepy"); !strings.Contains(p.Error, "no plugin handshake within 3s") || !strings.Contains(p.Error, "not started again until the file changes") {
		t.Errorf("sleepy error = %q", p.Error)
	}
	if p := find(ps, "flood"); !strings.Contains(p.Error, "printed something else than the plugin handshake") || !strings.Contains(p.Error, ": y") {
		t.Errorf("flood error = %q", p.Error)
	}
	if p := find(ps, "mock"); p == nil || p.Error != "" {
		t.Errorf("mock = %+v", p)
	}

	// Nothing of either bad plugin survives: not the shell, not its child.
	for _, file := range []string{sleepPids, floodPids} {
		for _, pgid := range pidLines(t, file) {
			testkit.WaitFor(t, "process group "+strconv.Itoa(pgid)+" to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
		}
	}

	// `plugins` and `status` answer from what the catalog knows, listing
	// the broken ones, and never start a broken binary again.
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := th.client().Plugins(ctx)
		cancel()
		if err != nil {
			t.Fatalf("plugins: %v", err)
		}
		if p := find(l.Plugins, "sleepy"); p == nil || p.Error == "" {
			t.Errorf("plugins lists sleepy as %+v", p)
		}
	}
	h, err := th.client().Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(h.Problems, "\n")
	if !strings.Contains(problems, "backend plugin sleepy") || !strings.Contains(problems, "backend plugin flood") {
		t.Errorf("status problems lack the broken plugins: %q", h.Problems)
	}
	if s, f := pidLines(t, sleepPids), pidLines(t, floodPids); len(s) != 1 || len(f) != 1 {
		t.Errorf("a broken binary was started again: sleepy %v, flood %v", s, f)
	}

	// A changed file is examined again: the fix is seen without a restart.
	testkit.Install(t, writeScript(t, "#!/bin/sh\necho $$ >> "+sleepPids+"\necho fixed but still not a plugin\n"), dir, "agent-worker-backend-sleepy")
	waitPlugins(t, th, "sleepy examined again", func(ps []api.Plugin) bool {
		p := find(ps, "sleepy")
		return p != nil && strings.Contains(p.Error, "fixed but still not a plugin")
	})
	if s := pidLines(t, sleepPids); len(s) != 2 {
		t.Errorf("the changed sleepy ran %d times in all, want 2", len(s))
	}
}

// A plugin file that is not executable is listed with what to do, and
// `new` and a workflow naming it say so instead of "unknown backend"; an
// agent whose plugin broke fails its run with the same reason. chmod +x
// makes it usable without a restart.
func TestPluginNotExecutableSaysChmod(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	c, ctx := th.client(), context.Background()
	echo := testkit.Build(t, "host/testdata/plugins/echo", "-X main.version=1.0.0")
	path := testkit.Install(t, echo, dir, "agent-worker-backend-echo")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "installed but not executable: chmod +x " + path
	isBroken := func(ps []api.Plugin) bool { p := find(ps, "echo"); return p != nil && p.Error != "" }
	ps := waitPlugins(t, th, "echo listed broken", isBroken)
	if p := find(ps, "echo"); p.Error != want {
		t.Errorf("echo error = %q, want %q", p.Error, want)
	}
	if h, err := c.Health(ctx); err != nil || !strings.Contains(strings.Join(h.Problems, "\n"), want) {
		t.Errorf("status problems = %q, %v", h.Problems, err)
	}
	_, err := c.CreateAgent(ctx, api.AgentSpec{Name: "e", Backend: "echo"})
	if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), want) {
		t.Errorf("new --backend echo: %v (code %s), want %q", err, api.ErrorCode(err), want)
	}
	file := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(file, []byte("name: team\nagents:\n  a:\n    backend: echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.StartWorkflow(ctx, api.StartWorkflow{Path: file})
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "team.yaml:") {
		t.Errorf("workflow with backend echo: %v, want %q with file:line", err, want)
	}

	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	waitPlugins(t, th, "echo usable after chmod", func(ps []api.Plugin) bool {
		p := find(ps, "echo")
		return p != nil && p.Error == "" && p.Version == "1.0.0"
	})
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "e", Backend: "echo"}); err != nil {
		t.Fatalf("new --backend echo after chmod: %v", err)
	}

	// The plugin breaks under an existing agent: its run says why.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPlugins(t, th, "echo broken again", isBroken)
	_, err = c.Serve(ctx, api.RunRequest{Agent: "e", Message: "hi"})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run on a broken plugin: %v, want %q", err, want)
	}
}

// The plugin probe, kept: binaries that are not plugins of the kind their
// name says are listed broken with a reason a user can act on, and none
// leaves a process behind.
func TestPluginProbeBrokenBinaries(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.PluginTimeout = 3 * time.Second })
	junk := make([]byte, 4096)
	if _, err := rand.Read(junk); err != nil {
		t.Fatal(err)
	}
	junkFile := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junkFile, append([]byte{0x7f, 'E', 'L', 'F'}, junk...), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		bin  string
		says []string
	}{
		"agent-worker-backend-junk":     {junkFile, []string{"exec format error"}},
		"agent-worker-backend-protov2":  {testkit.Build(t, "host/testdata/plugins/protov2"), []string{"another plugin protocol version than this daemon (1)", "Plugin version: 2"}},
		"agent-worker-backend-file":     {testkit.Build(t, "cmd/agent-worker-docs-file"), []string{`named as backend "file" but says it is docs "file"`, "rename it agent-worker-docs-file"}},
		"agent-worker-docs-mockdocs":    {mockBinary(t), []string{`named as docs "mockdocs" but says it is backend "mock"`}},
		"agent-worker-backend-hang":     {testkit.Build(t, "host/testdata/plugins/hangstart"), []string{"no plugin handshake within 3s"}},
		"agent-worker-backend-garbage":  {testkit.Build(t, "host/testdata/plugins/garbage"), []string{"printed something else than the plugin handshake", "hello from a plugin"}},
		"agent-worker-backend-otherapp": {testkit.Build(t, "host/testdata/plugins/wrongcookie"), []string{"not a working agent-worker plugin"}},
	}
	for name, tc := range tests {
		testkit.Install(t, tc.bin, dir, name)
	}
	ps := waitPlugins(t, th, "every probe binary examined", func(ps []api.Plugin) bool {
		for name := range tests {
			n := name[strings.LastIndex(name, "-")+1:]
			if p := find(ps, n); p == nil || p.Error == "" {
				return false
			}
		}
		return true
	})
	for name, tc := range tests {
		path := filepath.Join(dir, name)
		var p *api.Plugin
		for i := range ps {
			if ps[i].Path == path {
				p = &ps[i]
			}
		}
		for _, s := range tc.says {
			if p == nil || !strings.Contains(p.Error, s) {
				t.Errorf("%s: %+v, want an error saying %q", name, p, s)
			}
		}
		testkit.WaitFor(t, "no process of "+name, func() bool { return pluginProcesses(t, path) == 0 })
	}
	// A docs provider named as a backend is refused by name at `new`.
	if _, err := th.client().CreateAgent(context.Background(), api.AgentSpec{Name: "f", Backend: "file"}); err == nil || !strings.Contains(err.Error(), "rename it agent-worker-docs-file") {
		t.Errorf("new --backend file (a docs plugin): %v", err)
	}
}

// A plugin killed by a signal mid-run fails the run with the signal's
// name, not "killed by killed".
func TestRunPluginKilledBySignal(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.Scheduler.Attempts = 1 })
	mockAgent(t, th, "victim", map[string]any{"text": "working"}, map[string]any{"hang": true})
	working := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := th.client().Run(context.Background(), api.RunRequest{Agent: "victim", Message: "go"},
			api.RunHandlers{Chunk: func(api.RunChunk) { once.Do(func() { close(working) }) }})
		served <- err
	}()
	select {
	case <-working:
	case err := <-served:
		t.Fatalf("run ended before it was killed: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the run never started working")
	}
	ws := runWorkers(t, th)
	if len(ws) != 1 || !runner.IsPluginProcess(ws[0].PID, ws[0].PluginPath) || !runsPlugin(ws[0].PID, filepath.Join(dir, "agent-worker-backend-mock")) {
		t.Fatalf("run workers while the run works: %+v", ws)
	}
	pid := ws[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-served:
	case <-time.After(time.Minute):
		t.Fatal("serve never returned after the plugin was killed")
	}
	const want = "mock plugin process exited (killed by signal SIGKILL)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("serve: %v, want %q", err, want)
	}
	if r := lastRun(t, th, "victim"); r.State != "failed" || !strings.Contains(r.Error, want) {
		t.Errorf("run record = %+v", r)
	}
}
