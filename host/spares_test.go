package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/runspec"
	warmspares "github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// pidAgent is a mock agent whose run prints the pid of its plugin process
// (the shell's parent), its agent-specific variable and its directory.
func pidAgent(t testing.TB, th *testHost, name string) store.Agent {
	t.Helper()
	spec := api.AgentSpec{Name: name, Backend: "mock"}
	spec.Config.Env = map[string]string{"AW_SPARE_TEST": "for-" + name}
	spec.Config.Extra = map[string]json.RawMessage{"script": json.RawMessage(`[{"shell":"echo pid=$PPID env=$AW_SPARE_TEST cwd=$(pwd)"},{"result":"ok"}]`)}
	if _, err := th.client().CreateAgent(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	a, err := th.DB().GetAgent(context.Background(), store.AgentKey{Name: name, Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var pidLine = regexp.MustCompile(`pid=(\d+) env=(\S*) cwd=(\S*)`)

// runOnce runs agent through the supervisor and returns what its plugin
// process printed: its pid, env and working directory.
func runOnce(t testing.TB, th *testHost, agent store.Agent) (pid int, env, cwd string) {
	t.Helper()
	var text string
	out, err := th.sup.Run(context.Background(), runspec.RunSpec{Agent: agent, Attempt: 1, OnEvent: func(e backend.Event) {
		if e.Kind == backend.EventText {
			text += e.Text
		}
	}})
	if err != nil || out.Result != "ok" {
		t.Fatalf("run of %s: %+v, %v", agent.Name, out, err)
	}
	m := pidLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("run of %s printed %q", agent.Name, text)
	}
	pid, _ = strconv.Atoi(m[1])
	return pid, m[2], m[3]
}

// spares lists the warm spares the daemon has recorded.
func spares(t testing.TB, th *testHost) []store.Worker {
	t.Helper()
	ws, err := th.DB().ListWorkers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Worker
	for _, w := range ws {
		if w.State == store.WorkerSpare {
			out = append(out, w)
		}
	}
	return out
}

// runWorkers lists the recorded plugin processes serving runs (spares
// left out).
func runWorkers(t testing.TB, th *testHost) []store.Worker {
	t.Helper()
	ws, err := th.DB().ListWorkers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Worker
	for _, w := range ws {
		if w.State != store.WorkerSpare {
			out = append(out, w)
		}
	}
	return out
}

// waitSpare waits until exactly one live spare is recorded whose pid is
// not in old, and returns it.
func waitSpare(t testing.TB, th *testHost, old ...int) store.Worker {
	t.Helper()
	var got store.Worker
	testkit.WaitFor(t, fmt.Sprintf("a new warm spare (not %v)", old), func() bool {
		ws := spares(t, th)
		if len(ws) != 1 || !api.ProcessAlive(ws[0].PID) {
			return false
		}
		for _, pid := range old {
			if ws[0].PID == pid {
				return false
			}
		}
		got = ws[0]
		return true
	})
	return got
}

func mockSpares(t testing.TB, th *testHost) api.SpareStats {
	t.Helper()
	l, err := th.client().Plugins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := find(l.Plugins, "mock"); p != nil && p.Spares != nil {
		return *p.Spares
	}
	return api.SpareStats{}
}

// A run takes the warm spare (its process was started before the run, yet
// it runs with the agent's env in the agent's directory), each spare
// serves one run, and a new spare replaces the one taken. `plugins` and
// /metrics count it all.
func TestSpareServesOneRunAndIsReplaced(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	alice := pidAgent(t, th, "alice")
	workspace := filepath.Join(th.home, "workspaces", "global", "main", "alice")

	cold, env, cwd := runOnce(t, th, alice) // the backend's first run starts cold
	if env != "for-alice" || cwd != workspace {
		t.Errorf("cold run: env %q, cwd %q; want for-alice, %s", env, cwd, workspace)
	}
	s1 := waitSpare(t, th, cold)
	pid, env, cwd := runOnce(t, th, alice)
	if pid != s1.PID {
		t.Fatalf("second run ran in pid %d, want the spare %d", pid, s1.PID)
	}
	if env != "for-alice" || cwd != workspace {
		t.Errorf("run on a spare: env %q, cwd %q; want for-alice, %s", env, cwd, workspace)
	}
	testkit.WaitFor(t, "the used spare to exit", func() bool { return !api.ProcessAlive(s1.PID) })
	s2 := waitSpare(t, th, cold, s1.PID)
	if pid, _, _ := runOnce(t, th, alice); pid != s2.PID || pid == s1.PID {
		t.Errorf("third run ran in pid %d, want the new spare %d (the first was %d)", pid, s2.PID, s1.PID)
	}
	s3 := waitSpare(t, th, cold, s1.PID, s2.PID)

	st := mockSpares(t, th)
	if want := (api.SpareStats{Live: 1, Started: 3, Used: 2, ColdStarts: 1}); st != want {
		t.Errorf("plugins shows mock spares %+v, want %+v", st, want)
	}
	m := scrape(t, th)
	for key, want := range map[string]float64{
		`agent_worker_spare_processes{backend="mock"}`:                       1,
		`agent_worker_spare_events_total{backend="mock",event="started"}`:    3,
		`agent_worker_spare_events_total{backend="mock",event="taken"}`:      2,
		`agent_worker_spare_events_total{backend="mock",event="cold_start"}`: 1,
	} {
		if m[key] != want {
			t.Errorf("metrics %s = %v, want %v", key, m[key], want)
		}
	}
	// status lists runs in flight, not spares.
	if h, err := th.client().Health(context.Background()); err != nil || len(h.Workers) != 0 {
		t.Errorf("status workers = %+v, %v; want none", h.Workers, err)
	}
	th.stop(t)
	if api.ProcessAlive(s3.PID) {
		t.Errorf("spare %d outlived the daemon", s3.PID)
	}
}

// A changed plugin binary replaces the waiting spare: the old process is
// killed and the next run executes the new bytes.
func TestSpareReplacedWhenThePluginChanges(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{})
	alice := pidAgent(t, th, "alice")
	cold, _, _ := runOnce(t, th, alice)
	old := waitSpare(t, th, cold)

	testkit.Install(t, testkit.Build(t, "cmd/agent-worker-backend-mock", "-s"), dir, "agent-worker-backend-mock")
	ps := waitPlugins(t, th, "the new mock", func(ps []api.Plugin) bool { p := find(ps, "mock"); return p != nil && p.SHA256 != old.PluginSHA256 })
	newSHA, newCopy := find(ps, "mock").SHA256, find(ps, "mock").ExecPath
	fresh := waitSpare(t, th, old.PID)
	if fresh.PluginSHA256 != newSHA || fresh.PluginPath != newCopy || newCopy != filepath.Join(catalog.VerifiedDir(th.home), newSHA) {
		t.Errorf("new spare runs sha %s from %s, want %s from its verified copy %s", fresh.PluginSHA256, fresh.PluginPath, newSHA, newCopy)
	}
	testkit.WaitFor(t, "the old spare to be killed", func() bool { return !api.ProcessAlive(old.PID) })
	// No entry refers to the old bytes any more: their copy is removed.
	testkit.WaitFor(t, "the old verified copy to be removed", func() bool { _, err := os.Stat(old.PluginPath); return os.IsNotExist(err) })
	if pid, _, _ := runOnce(t, th, alice); pid != fresh.PID {
		t.Errorf("run after the change ran in pid %d, want the new spare %d", pid, fresh.PID)
	}
	if run := lastRun(t, th, "alice"); run.PluginSHA256 != newSHA {
		t.Errorf("run recorded sha %s, want the new %s", run.PluginSHA256, newSHA)
	}
}

// --spares 0 for a backend: every run starts its own process, and no spare
// is ever started.
func TestSparesZeroStartsColdOnly(t *testing.T) {
	t.Parallel()
	sp, err := warmspares.Parse("1,mock=0")
	if err != nil {
		t.Fatal(err)
	}
	th, _ := pluginHost(t, runner.SupervisorConfig{Spares: &sp})
	alice := pidAgent(t, th, "alice")
	first, _, _ := runOnce(t, th, alice)
	second, env, _ := runOnce(t, th, alice)
	if first == second || env != "for-alice" {
		t.Errorf("runs in pids %d and %d (env %q), want two processes", first, second, env)
	}
	if ws := spares(t, th); len(ws) != 0 {
		t.Errorf("spares started with mock=0: %+v", ws)
	}
	if st := mockSpares(t, th); st != (api.SpareStats{ColdStarts: 2}) {
		t.Errorf("plugins shows mock spares %+v, want 2 cold starts only", st)
	}
}

// A backend without a run for the idle time loses its spares; its next
// run starts cold and brings one back.
func TestSparesExpireWhenTheBackendIsIdle(t *testing.T) {
	t.Parallel()
	// Short, but longer than a spare takes to start on a loaded machine.
	th, _ := pluginHost(t, runner.SupervisorConfig{SpareIdle: 1500 * time.Millisecond})
	alice := pidAgent(t, th, "alice")
	cold, _, _ := runOnce(t, th, alice)
	s := waitSpare(t, th, cold)
	testkit.WaitFor(t, "the idle backend's spare to be killed", func() bool { return len(spares(t, th)) == 0 && !api.ProcessAlive(s.PID) })
	if st := mockSpares(t, th); st.Live != 0 || st.Started != 1 || st.Used != 0 {
		t.Errorf("plugins shows mock spares %+v after expiry", st)
	}
	if pid, _, _ := runOnce(t, th, alice); pid == s.PID {
		t.Errorf("run after expiry ran in the expired spare %d", pid)
	}
	if st := mockSpares(t, th); st.ColdStarts != 2 || st.Used != 0 {
		t.Errorf("plugins shows mock spares %+v; want the run after expiry started cold", st)
	}
}

// Two runs in a row never share a process, whether or not a spare is
// ready for the second.
func TestRunsNeverShareAProcess(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	alice, bob := pidAgent(t, th, "alice"), pidAgent(t, th, "bob")
	seen := map[int]string{}
	for i := range 6 {
		a := alice
		if i%2 == 1 {
			a = bob
		}
		pid, env, _ := runOnce(t, th, a)
		if prev, ok := seen[pid]; ok {
			t.Fatalf("run %d (%s) ran in pid %d, which served %s's run before", i, a.Name, pid, prev)
		}
		if env != "for-"+a.Name {
			t.Errorf("run %d (%s) saw env %q", i, a.Name, env)
		}
		seen[pid] = a.Name
	}
}

// A spare a killed daemon left alive (here a real mock plugin process,
// started and handshaken, recorded as a spare) is killed by the next
// daemon at start-up, and its row forgotten.
func TestReapKillsASpareLeftBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, dir := t.TempDir(), t.TempDir()
	bin := testkit.Install(t, mockBinary(t), dir, "agent-worker-backend-mock")
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	client := goplugin.NewClient(pluginclient.ClientConfig(cmd, hclog.NewNullLogger()))
	t.Cleanup(client.Kill)
	if _, err := client.Client(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	db, err := store.Open(ctx, filepath.Join(home, api.DBFile), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddWorker(ctx, store.Worker{RunID: "spare_left", State: store.WorkerSpare, PID: pid, PGID: pid, PluginPath: bin}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !api.ProcessAlive(pid) {
		t.Fatal("the left spare is not running")
	}
	th := startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: []string{dir}, RuntimeDir: testkit.ShortTempDir(t)})
	testkit.WaitFor(t, "the left spare to be killed", func() bool { return !api.ProcessAlive(pid) })
	if ws, err := th.DB().ListWorkers(ctx); err != nil || len(ws) != 0 {
		t.Errorf("workers after reaping = %+v, %v; want none", ws, err)
	}
}
