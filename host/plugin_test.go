package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// TestMain removes the binaries the tests built (testkit.Build).
func TestMain(m *testing.M) { testkit.Main(m) }

func mockBinary(t testing.TB) string { return testkit.Build(t, "cmd/agent-worker-backend-mock") }

// pluginHost starts a daemon whose first plugins dir is returned, with the
// mock backend installed.
func pluginHost(t testing.TB, sc runner.SupervisorConfig, opts ...func(*Config)) (*testHost, string) {
	t.Helper()
	dir := installed(t, "mock")
	cfg := Config{Home: t.TempDir(), Listen: "127.0.0.1:0", PluginsDirs: []string{dir}, Supervisor: sc, RuntimeDir: testkit.ShortTempDir(t),
		Scheduler: scheduler.Config{RetryBase: 10 * time.Millisecond}}
	for _, o := range opts {
		o(&cfg)
	}
	return startHostWith(t, cfg), dir
}

// waitPlugins polls GET /plugins until cond holds (the watcher works in the
// background; there is no event a client can wait on).
func waitPlugins(t testing.TB, th *testHost, what string, cond func([]api.Plugin) bool) []api.Plugin {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := th.client().Plugins(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if cond(l.Plugins) {
			return l.Plugins
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugins never showed %s: %+v", what, l.Plugins)
		}
		select {
		case <-th.catalog.Changed():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func find(ps []api.Plugin, name string) *api.Plugin {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

func TestPluginHotReload(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	ps := waitPlugins(t, th, "the mock", func(ps []api.Plugin) bool { p := find(ps, "mock"); return p != nil && p.Error == "" })
	if p := find(ps, "mock"); p.Kind != "backend" || len(p.SHA256) != 64 || !contains(p.APIVersions, "v1") {
		t.Errorf("mock = %+v", p)
	}

	// Add: a new binary is usable without a restart.
	v1 := testkit.Build(t, "host/testdata/plugins/echo", "-X main.version=1.0.0")
	testkit.Install(t, v1, dir, "agent-worker-backend-echo")
	ps = waitPlugins(t, th, "echo 1.0.0", func(ps []api.Plugin) bool { p := find(ps, "echo"); return p != nil && p.Version == "1.0.0" })
	sha1 := find(ps, "echo").SHA256
	if _, err := th.client().CreateAgent(context.Background(), api.AgentSpec{Name: "e", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}

	// Replace: the next run uses the new binary.
	v2 := testkit.Build(t, "host/testdata/plugins/echo", "-X main.version=2.0.0")
	testkit.Install(t, v2, dir, "agent-worker-backend-echo")
	ps = waitPlugins(t, th, "echo 2.0.0", func(ps []api.Plugin) bool { p := find(ps, "echo"); return p != nil && p.Version == "2.0.0" })
	if find(ps, "echo").SHA256 == sha1 {
		t.Errorf("replaced binary kept its sha256")
	}

	// Break: a binary that is not a plugin is listed with its error.
	for name, bin := range map[string]string{
		"agent-worker-backend-garbage": testkit.Build(t, "host/testdata/plugins/garbage"),
		"agent-worker-backend-other":   testkit.Build(t, "host/testdata/plugins/wrongcookie"),
		"agent-worker-backend-shell":   writeScript(t, "#!/bin/sh\necho not a plugin\n"),
		"agent-worker-backend-renamed": v2, // says it is echo
	} {
		testkit.Install(t, bin, dir, name)
	}
	ps = waitPlugins(t, th, "four broken plugins", func(ps []api.Plugin) bool {
		n := 0
		for _, p := range ps {
			if p.Error != "" {
				n++
			}
		}
		return n == 4
	})
	for _, name := range []string{"garbage", "other", "shell", "renamed"} {
		if p := find(ps, name); p == nil || p.Error == "" {
			t.Errorf("%s: %+v, want an error", name, p)
		}
	}
	if p := find(ps, "renamed"); p != nil && !strings.Contains(p.Error, `says it is backend "echo"`) {
		t.Errorf("renamed error = %q", p.Error)
	}
	// status lists them as problems.
	if h, err := th.client().Health(context.Background()); err != nil || !strings.Contains(strings.Join(h.Problems, "\n"), "backend plugin shell") || find(h.Plugins, "echo") == nil {
		t.Errorf("status lacks the plugins (%d) or the broken one among problems: %q, %v", len(h.Plugins), h.Problems, err)
	}
	// The broken ones never affect the daemon or the good plugins.
	if p := find(ps, "echo"); p == nil || p.Error != "" {
		t.Errorf("echo after broken installs: %+v", p)
	}

	// Remove: it disappears.
	if err := os.Remove(filepath.Join(dir, "agent-worker-backend-echo")); err != nil {
		t.Fatal(err)
	}
	waitPlugins(t, th, "echo gone", func(ps []api.Plugin) bool { return find(ps, "echo") == nil })
	if _, err := th.client().Health(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPluginHangingOnStartIsListedBroken(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	testkit.Install(t, testkit.Build(t, "host/testdata/plugins/hangstart"), dir, "agent-worker-backend-hang")
	ps := waitPlugins(t, th, "hang broken", func(ps []api.Plugin) bool { p := find(ps, "hang"); return p != nil && p.Error != "" })
	if p := find(ps, "hang"); !strings.Contains(p.Error, "handshake") {
		t.Errorf("hang error = %q", p.Error)
	}
	if n := pluginProcesses(t, filepath.Join(dir, "agent-worker-backend-hang")); n != 0 {
		t.Errorf("%d fingerprint processes left running", n)
	}
}

func writeScript(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// pluginProcesses counts live processes of the plugin installed at path.
func pluginProcesses(t testing.TB, path string) int {
	t.Helper()
	return len(allProcesses(t, path))
}

// runsPlugin reports whether pid is a process of the plugin installed at
// path: the daemon executes the plugin's verified copy under that name
// (argv[0]); a process started from path itself counts too.
func runsPlugin(pid int, path string) bool {
	return runner.IsPluginProcess(pid, path) || testkit.RunsBinary(pid, path)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// mockAgent registers an agent on the mock backend with a script.
func mockAgent(t testing.TB, th *testHost, name string, script ...map[string]any) {
	t.Helper()
	spec := api.AgentSpec{Name: name, Backend: "mock"}
	if len(script) > 0 {
		b, _ := json.Marshal(script)
		spec.Config.Extra = map[string]json.RawMessage{"script": b}
	}
	if _, err := th.client().CreateAgent(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
}

func lastRun(t testing.TB, th *testHost, agent string) api.Run {
	t.Helper()
	runs, err := th.client().ListRuns(context.Background(), agent)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s: %+v, %v", agent, runs, err)
	}
	return runs[0]
}

func TestRunDefaultMockRepliesAndAcks(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	mockAgent(t, th, "alice")
	var chunks []string
	res, err := th.client().Run(context.Background(), api.RunRequest{Agent: "alice", Message: "summarise the plan"},
		api.RunHandlers{Chunk: func(c api.RunChunk) { chunks = append(chunks, c.Text) }})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's reply is the result's replies (what ask prints), not a
	// chunk: the mock streams no text of its own.
	if res.Content != "alice done." || len(res.Replies) != 1 || res.Replies[0].From != "alice" ||
		!strings.Contains(res.Replies[0].Content, "Processed: user: alice summarise the plan") || len(chunks) != 0 {
		t.Errorf("result %+v, chunks %q", res, chunks)
	}
	ms, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil || len(ms) != 2 || ms[1].From != "alice" || !strings.Contains(ms[1].Content, "Processed: user: alice summarise the plan") {
		t.Errorf("channel after run = %+v, %v", ms, err)
	}
	if a, err := th.client().GetAgent(context.Background(), api.Target{Agent: "alice", Workflow: "global", Tag: "main"}); err != nil || a.InboxDepth != 0 {
		t.Errorf("inbox after a successful run = %d, %v; want 0", a.InboxDepth, err)
	}
	r := lastRun(t, th, "alice")
	if r.State != "succeeded" || r.InboxUntilSeq != 1 || r.PluginSHA256 == "" {
		t.Errorf("run record = %+v", r)
	}
	detail, err := th.client().GetRun(context.Background(), r.ID)
	if err != nil || len(detail.Events) == 0 {
		t.Errorf("transcript = %+v, %v", detail, err)
	}
}

func TestRunFaults(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{IdleTimeout: 2 * time.Second})
	mockPath := filepath.Join(dir, "agent-worker-backend-mock")
	tests := map[string]struct {
		script []map[string]any
		says   string
	}{
		"crash mid-run":         {[]map[string]any{{"text": "working"}, {"crash": 3}}, "exit code 3"},
		"exit 0 without result": {[]map[string]any{{"crash": 0}}, "exit code 0"},
		"hang":                  {[]map[string]any{{"hang": true}}, "idle timeout"},
		"fails":                 {[]map[string]any{{"fail": "model overloaded"}}, "model overloaded"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			agent := strings.ReplaceAll(name, " ", "-")
			mockAgent(t, th, agent, tc.script...)
			_, err := th.client().Serve(context.Background(), api.RunRequest{Agent: agent, Message: "go"})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("serve: %v, want an error saying %q", err, tc.says)
			}
			if r := lastRun(t, th, agent); r.State != "failed" || !strings.Contains(r.Error, tc.says) {
				t.Errorf("run record = %+v", r)
			}
			if a, err := th.client().GetAgent(context.Background(), api.Target{Agent: agent, Workflow: "global", Tag: "main"}); err != nil || a.InboxDepth != 1 {
				t.Errorf("failed run acked its inbox: depth %d, %v", a.InboxDepth, err)
			}
		})
	}
	// What is left is the backend's one warm spare.
	spare := waitSpare(t, th)
	if n := pluginProcesses(t, mockPath); n != 1 || !runsPlugin(spare.PID, mockPath) {
		t.Errorf("%d mock processes left after the faults, want the spare %d only", n, spare.PID)
	}
	if _, err := th.client().Health(context.Background()); err != nil {
		t.Errorf("daemon after faults: %v", err)
	}
	// A flood is recorded compactly and the run still succeeds.
	mockAgent(t, th, "flood", map[string]any{"flood": 100000}, map[string]any{"result": "flooded"})
	res, err := th.client().Serve(context.Background(), api.RunRequest{Agent: "flood", Message: "go"})
	if err != nil || res.Content != "flooded" {
		t.Fatalf("flood: %+v, %v", res, err)
	}
	detail, err := th.client().GetRun(context.Background(), lastRun(t, th, "flood").ID)
	if err != nil {
		t.Fatalf("GetRun of the flood run: %v", err)
	}
	if n := len(detail.Events); n > 2000 {
		t.Errorf("flood transcript has %d entries; text deltas should coalesce", n)
	}
}

// 20 runs back to back leave no processes, sockets or descriptors behind.
func TestRunsLeaveNothingBehind(t *testing.T) {
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	mockAgent(t, th, "alice")
	run := func() {
		if _, err := th.client().Serve(context.Background(), api.RunRequest{Agent: "alice", Message: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm up: connection pools, the store's statement caches, the backend's warm spare
	first := waitSpare(t, th)
	fds, socks := countFDs(t), dirEntries(t, th.cfg.RuntimeDir)
	for range 20 {
		run()
	}
	// What is left is one warm spare, as before the runs.
	if spare := waitSpare(t, th, first.PID); !api.ProcessAlive(spare.PID) || api.ProcessAlive(first.PID) {
		t.Errorf("spares: %+v now, %+v before", spare, first)
	}
	if n := pluginProcesses(t, filepath.Join(dir, "agent-worker-backend-mock")); n != 1 {
		t.Errorf("%d plugin processes left, want the spare only", n)
	}
	if got := countFDs(t); got > fds+4 {
		t.Errorf("file descriptors grew from %d to %d over 20 runs", fds, got)
	}
	if got := dirEntries(t, th.cfg.RuntimeDir); got > socks {
		t.Errorf("socket dirs grew from %d to %d", socks, got)
	}
	if ws := runWorkers(t, th); len(ws) != 0 {
		t.Errorf("workers rows left: %+v", ws)
	}
	if entries, err := os.ReadDir(filepath.Join(th.home, "runs")); err != nil && !os.IsNotExist(err) {
		t.Errorf("read the run dirs: %v", err)
	} else if len(entries) != 0 {
		t.Errorf("run dirs left: %d", len(entries))
	}
}

func countFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func dirEntries(t testing.TB, dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestReapLeftovers(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	// A plugin process the way a crashed daemon would leave it, and a row
	// whose pid now belongs to something else.
	mock := filepath.Join(dir, "agent-worker-backend-mock")
	orphan := testkit.StartDetached(t, mock)
	stranger := testkit.StartDetached(t, "/bin/sleep", "60")
	for i, pid := range []int{orphan, stranger} {
		w := store.Worker{RunID: fmt.Sprintf("run_%d", i), PID: pid, PGID: pid, PluginPath: mock}
		if err := th.DB().AddWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := th.sup.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitGone(t, orphan)
	if !testkit.Alive(stranger) {
		t.Errorf("reap killed a process that was not our plugin")
	}
}

// A docs provider plugin that dies is restarted; callers get a retryable
// error at worst, never a hang, and nothing written is lost.
func TestDocsPluginRestartsAfterCrash(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	docs := testkit.Install(t, testkit.Build(t, "cmd/agent-worker-docs-file"), dir, "agent-worker-docs-file")
	waitPlugins(t, th, "the file docs plugin", func(ps []api.Plugin) bool { p := find(ps, "file"); return p != nil && p.Error == "" })
	c, ctx := th.client(), context.Background()
	global := api.Target{Workflow: "global", Tag: "main"}
	if err := c.DocWrite(ctx, global, "notes.md", api.DocumentWrite{Content: "kept"}); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, p := range allProcesses(t, docs) {
		pid = p
	}
	if pid == 0 {
		t.Fatal("no docs plugin process after a write: the built-in provider was used")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitGone(t, pid)
	deadline := time.Now().Add(15 * time.Second)
	for {
		d, err := c.DocRead(ctx, global, "notes.md")
		if err == nil {
			if d.Content != "kept" {
				t.Errorf("after restart notes.md = %q", d.Content)
			}
			break
		}
		if api.ErrorCode(err) != api.CodeUnavailable {
			t.Fatalf("read while the plugin restarts: %v (code %s), want unavailable", err, api.ErrorCode(err))
		}
		if time.Now().After(deadline) {
			t.Fatal("docs plugin never came back")
		}
		time.Sleep(50 * time.Millisecond) // the restart backoff
	}
	if ps := allProcesses(t, docs); len(ps) != 1 || ps[0] == pid {
		t.Errorf("docs plugin processes after restart: %v (old pid %d)", ps, pid)
	}
	m := scrape(t, th)
	if r, n := m[`agent_worker_plugin_restarts_total{kind="docs",plugin="file"}`], m[`agent_worker_plugin_processes{kind="docs"}`]; r != 1 || n != 1 {
		t.Errorf("metrics after the restart: %v restarts, %v docs processes; want 1 and 1", r, n)
	}
}

func allProcesses(t testing.TB, path string) []int {
	t.Helper()
	return testkit.Pids(t, func(pid int) bool { return runsPlugin(pid, path) })
}

// A docs plugin's sdk error classes come back as the API's codes: the
// client reads not_found (exit 3) and conflict (exit 4) with the plugin's
// own message, and errors.Is works on them.
func TestDocsPluginErrorsKeepTheirCodes(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	docs := testkit.Install(t, testkit.Build(t, "cmd/agent-worker-docs-file"), dir, "agent-worker-docs-file")
	waitPlugins(t, th, "the file docs plugin", func(ps []api.Plugin) bool { p := find(ps, "file"); return p != nil && p.Error == "" })
	c, ctx := th.client(), context.Background()
	global := api.Target{Workflow: "global", Tag: "main"}
	if err := c.DocWrite(ctx, global, "plan.md", api.DocumentWrite{Content: "v1"}); err != nil {
		t.Fatal(err)
	}
	if len(allProcesses(t, docs)) == 0 {
		t.Fatal("no docs plugin process after a write: the built-in provider was used")
	}
	tests := map[string]struct {
		call func() error
		is   error
		exit int
		says string
	}{
		"sdk.ErrNotFound": {func() error { _, err := c.DocRead(ctx, global, "missing.md"); return err },
			api.ErrNotFound, api.ExitNotFound, "document missing.md does not exist"},
		"sdk.ErrConflict": {func() error {
			return c.DocWrite(ctx, global, "plan.md", api.DocumentWrite{Content: "v2", Create: true})
		},
			api.ErrConflict, api.ExitConflict, "document plan.md already exists"},
	}
	for name, tc := range tests {
		err := tc.call()
		if !errors.Is(err, tc.is) || api.ExitCode(api.ErrorCode(err)) != tc.exit || err.Error() != tc.says {
			t.Errorf("%s: client error = %v (code %s); want %v, exit %d, saying %q", name, err, api.ErrorCode(err), tc.is, tc.exit, tc.says)
		}
	}
	if d, err := c.DocRead(ctx, global, "plan.md"); err != nil || d.Content != "v1" {
		t.Errorf("plan.md after the refused create = %+v, %v; want v1", d, err)
	}
}
