//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// noContext sends every run an empty context, so that the mock needs no
// daemon to connect to for steps that do not act.
type noContext struct{}

func (noContext) RunContext(context.Context, store.AgentKey, []store.Message, int64) (backend.RunContext, error) {
	return backend.RunContext{}, nil
}

// crashPlugins is a catalog holding the mock and the crashpoint test
// plugin (host/testdata/plugins/crashpoint), examined once.
type crashPlugins struct {
	catalog *catalog.Catalog
	exes    []string // their verified copies, which every process of theirs runs
}

func newCrashPlugins(t *testing.T) crashPlugins {
	t.Helper()
	dir := t.TempDir()
	testkit.Install(t, testkit.Build(t, "cmd/agent-worker-backend-mock"), dir, "agent-worker-backend-mock")
	testkit.Install(t, testkit.Build(t, "host/testdata/plugins/crashpoint"), dir, "agent-worker-backend-crashpoint")
	c := catalog.NewCatalog([]string{dir}, catalog.VerifiedDir(t.TempDir()), testkit.ShortTempDir(t), 0, hclog.NewNullLogger())
	c.Scan(t.Context())
	var cp crashPlugins
	cp.catalog = c
	for _, name := range []string{"mock", "crashpoint"} {
		p, err := c.Lookup(plugin.KindBackend, name)
		if err != nil {
			t.Fatalf("the catalog does not list %s: %v", name, err)
		}
		cp.exes = append(cp.exes, p.ExecPath)
	}
	return cp
}

// script is a mock agent's config: steps run on the first attempt only
// (the faulty ones), then a result every attempt reaches.
func script(steps ...map[string]any) backend.AgentConfig {
	for _, s := range steps {
		s["when"] = map[string]any{"attempt": 1}
	}
	b, _ := json.Marshal(append(steps, map[string]any{"result": "ok"}))
	return backend.AgentConfig{Extra: map[string]json.RawMessage{"script": b}}
}

var spawnedPID = regexp.MustCompile(`^spawned \S+ \(pid (\d+)\)$`)

// Each way a run's plugin process can fail, driven through Supervisor.Run
// against real plugin processes (the mock, and the crashpoint plugin for
// what the mock cannot do: fail its handshake, ignore cancel and SIGTERM).
// The user sees the run recorded with the right state and error, its
// transcript holding what the plugin sent before it failed, and nothing
// left behind: no process of the run's group (/proc), no process of the
// plugin but the warm spares, no socket directory of the run, no cgroup
// of it (when cgroups are on), no run counted against the spares' pool,
// no workers row; and the agent's next run works.
//
// The daemon-wide view of some of these points (the scheduler's retries,
// the HTTP answers) is tested in host/: a crash mid-run in
// TestRunFaults and TestRunPluginKilledBySignal, the run
// timeout in TestRunTimeoutIsRecordedTimedOut, a cancel with the run's
// process tree in TestCancelKillsTheRunsProcessTree, a stale heartbeat in
// TestStaleRunIsKilledAndRetried; a killed daemon in cmd/agent-worker's
// TestE2EDaemonKilledMidRun. The runEnd's order itself is
// TestRunEndLeavesNothingBehind.
func TestRunCrashPointsLeaveNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts plugin processes; skipped with -short")
	}
	cp := newCrashPlugins(t)
	tests := []struct {
		name      string
		backend   string
		crash     string // the crashpoint plugin's CRASHPOINT
		config    backend.AgentConfig
		timeout   time.Duration // the run timeout, if not the default
		kill      bool          // SIGKILL the plugin at its "working" event
		cancel    bool          // the caller cancels at its "working" event
		state     api.RunState
		says      string
		permanent bool
		working   bool // the transcript holds the "working" sent before the failure
		child     bool // the plugin started a child process
	}{
		{name: "exits before the handshake", backend: "crashpoint", crash: "before-handshake",
			state: api.RunFailed, says: "ended or closed its stdout before the plugin handshake"},
		{name: "prints garbage instead of a handshake", backend: "crashpoint", crash: "garbage",
			state: api.RunFailed, says: "printed something else than the plugin handshake"},
		{name: "exits 2 mid-run", backend: "crashpoint", crash: "exit2",
			state: api.RunFailed, says: "crashpoint plugin process exited (exit code 2) before finishing the run", working: true},
		{name: "killed by SIGKILL mid-run", backend: "mock", config: script(map[string]any{"text": "working"}, map[string]any{"hang": true}), kill: true,
			state: api.RunFailed, says: "mock plugin process exited (killed by signal SIGKILL)", working: true},
		{name: "hangs until the run timeout", backend: "mock", config: script(map[string]any{"text": "working"}, map[string]any{"hang": true}), timeout: 2 * time.Second,
			state: api.RunTimedOut, says: "run timeout", working: true},
		{name: "hangs until the caller cancels", backend: "mock", config: script(map[string]any{"text": "working"}, map[string]any{"hang": true}), cancel: true,
			state: api.RunCancelled, says: "run cancelled", working: true},
		{name: "ignores cancel and SIGTERM", backend: "crashpoint", crash: "stubborn", cancel: true,
			state: api.RunCancelled, says: "run cancelled", working: true},
		{name: "leaves a child running as it crashes", backend: "crashpoint", crash: "child",
			state: api.RunFailed, says: "exit code 2", working: true, child: true},
	}
	modes := map[string]func(t *testing.T) *Cgroups{
		"process group": func(*testing.T) *Cgroups { return nil },
		"cgroup": func(t *testing.T) *Cgroups {
			cg := NewCgroups("", hclog.NewNullLogger())
			if cg.root == "" {
				t.Skipf("no cgroup v2 this test may write to (%s): the process-group mode covers the rest", cg.why)
			}
			t.Cleanup(cg.Close)
			return cg
		},
	}
	for mode, cgroups := range modes {
		t.Run(mode, func(t *testing.T) {
			cg := cgroups(t)
			// One after the other: the checks look for any process of
			// the plugins' binaries, which a parallel case would start.
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					ctx := t.Context()
					db, err := store.Open(ctx, filepath.Join(t.TempDir(), "agent-worker.db"), store.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
					if _, err := db.CreateWorkflow(ctx, store.Workflow{Name: "wf", Tag: "main"}); err != nil {
						t.Fatal(err)
					}
					agent := store.Agent{Name: "alice", Workflow: "wf", Tag: "main", Backend: tc.backend, Config: tc.config}
					gate := filepath.Join(t.TempDir(), "crash now")
					if tc.crash != "" {
						agent.Config.Env = map[string]string{"CRASHPOINT": tc.crash, "CRASHPOINT_GATE": gate}
					}
					if _, err := db.CreateAgent(ctx, agent); err != nil {
						t.Fatal(err)
					}
					runtime := testkit.ShortTempDir(t)
					// The mock keeps a warm spare (its second run takes it);
					// the crashpoint plugin must start cold, with the
					// agent's CRASHPOINT in its environment.
					counts := spares.Counts{Default: 1, Backends: map[string]int{"crashpoint": 0}}
					s := NewSupervisor(db, cp.catalog, t.TempDir(), runtime, func() string { return "http://127.0.0.1:1/mcp" },
						SupervisorConfig{Context: noContext{}, Spares: &counts, RunTimeout: tc.timeout, Cgroups: cg}, hclog.NewNullLogger())
					sparesCtx, stopSpares := context.WithCancel(ctx)
					sparesDone := make(chan struct{})
					go func() { defer close(sparesDone); s.RunSpares(sparesCtx) }()
					t.Cleanup(func() { stopSpares(); <-sparesDone })

					runCtx, cancel := context.WithCancel(ctx)
					defer cancel()
					spec := runspec.RunSpec{ID: runspec.NewRunID(), Agent: agent, Attempt: 1}
					var pgid, child int
					spec.OnEvent = func(e backend.Event) {
						if m := spawnedPID.FindStringSubmatch(e.Text); m != nil {
							child, _ = strconv.Atoi(m[1])
						}
						if e.Kind != backend.EventText || e.Text != "working" {
							return
						}
						ws, err := db.ListWorkers(context.Background())
						if err != nil {
							t.Error(err)
						}
						for _, w := range ws {
							if w.RunID == spec.ID {
								pgid = w.PGID
							}
						}
						if pgid == 0 {
							t.Errorf("the run's plugin process has no workers row while it runs: %+v", ws)
						}
						if tc.kill {
							_ = syscall.Kill(pgid, syscall.SIGKILL) // its pid is its group's id
						}
						if tc.cancel {
							cancel()
						}
						if err := os.WriteFile(gate, nil, 0o600); err != nil { // the crashpoint plugin may exit now
							t.Error(err)
						}
					}
					out, err := s.Run(runCtx, spec)

					// What the caller is told.
					if err == nil || !strings.Contains(err.Error(), tc.says) {
						t.Errorf("Run returned %v, want an error saying %q", err, tc.says)
					}
					if backend.IsPermanent(err) != tc.permanent {
						t.Errorf("Run's error %v: permanent %v, want %v (a transient one is retried)", err, backend.IsPermanent(err), tc.permanent)
					}
					if out.Run.State != tc.state {
						t.Errorf("outcome state %q, want %q", out.Run.State, tc.state)
					}
					// What the run's record says, its transcript written
					// and closed.
					r, events, gerr := db.GetRun(context.Background(), spec.ID)
					if gerr != nil || r.State != tc.state || !strings.Contains(r.Error, tc.says) || r.EndedAt.IsZero() {
						t.Errorf("run recorded as %+v, %v; want %s, ended, saying %q", r, gerr, tc.state, tc.says)
					}
					if got := transcriptHas(events, "working"); got != tc.working {
						t.Errorf("the transcript holds the event sent before the failure: %v, want %v (%d events)", got, tc.working, len(events))
					}
					if tc.working && pgid == 0 {
						t.Fatal("never saw the run's process group")
					}
					if tc.child && child == 0 {
						t.Error("never heard the plugin's child's pid")
					}
					if child != 0 {
						testkit.WaitGone(t, child)
					}
					assertNothingLeft(t, s, db, cp, runtime, cg, pgid, tc.backend)

					// The agent runs again.
					again := agent
					again.Config.Env = nil
					out, err = s.Run(ctx, runspec.RunSpec{ID: runspec.NewRunID(), Agent: again, Attempt: 2})
					if err != nil || out.Run.State != api.RunSucceeded || out.Result != "ok" {
						t.Fatalf("the next run: %+v, %v; want it to succeed with ok", out, err)
					}
					assertNothingLeft(t, s, db, cp, runtime, cg, 0, tc.backend)
					stopSpares()
					<-sparesDone
					if ws, err := db.ListWorkers(context.Background()); err != nil || len(ws) != 0 {
						t.Errorf("workers rows left once the spares stopped: %+v, %v", ws, err)
					}
					assertNothingLeft(t, s, db, cp, runtime, cg, 0, tc.backend)
				})
			}
		})
	}
}

// transcriptHas reports whether a text event of the transcript says text.
func transcriptHas(events []store.RunEvent, text string) bool {
	for _, e := range events {
		if e.Kind == string(backend.EventText) && strings.Contains(e.Data, text) {
			return true
		}
	}
	return false
}

// assertNothingLeft waits until no run holds anything: only the warm
// spares the workers table lists run the plugins' binaries, each with its
// socket directory (and cgroup) and counted live by the pool; no process
// is left in group pgid; the backend counts no run under way. A spare
// being started meanwhile shows as a process without its row for a moment,
// hence the polling.
func assertNothingLeft(t *testing.T, s *Supervisor, db *store.DB, cp crashPlugins, runtime string, cg *Cgroups, pgid int, backendName string) {
	t.Helper()
	if pgid != 0 {
		testkit.WaitFor(t, "the run's process group "+strconv.Itoa(pgid)+" to be gone", func() bool {
			return len(testkit.Pids(t, func(pid int) bool { p, ok := testkit.ReadProc(pid); return ok && p.PGID == pgid })) == 0
		})
	}
	if n := s.spares.Runs(backendName); n != 0 {
		t.Errorf("the pool counts %d runs of %s under way", n, backendName)
	}
	testkit.Eventually(t, "nothing but the warm spares", func() error {
		ws, err := db.ListWorkers(context.Background())
		if err != nil {
			return err
		}
		spare := map[int]bool{}
		for _, w := range ws {
			if w.State != store.WorkerSpare {
				return fmt.Errorf("a workers row of a run is left: %+v", w)
			}
			spare[w.PID] = true
		}
		if left := testkit.Pids(t, func(pid int) bool {
			return !spare[pid] && (testkit.RunsBinary(pid, cp.exes[0]) || testkit.RunsBinary(pid, cp.exes[1]))
		}); len(left) > 0 {
			return fmt.Errorf("plugin processes %v run, not spares (%v)", left, ws)
		}
		if st := s.SpareStats()[backendName]; st.Live != len(spare) {
			return fmt.Errorf("the pool counts %d live spares, the workers table %d", st.Live, len(spare))
		}
		dirs, err := filepath.Glob(filepath.Join(runtime, "aw-*"))
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if !strings.Contains(filepath.Base(d), "-spare-") {
				return fmt.Errorf("a run's socket directory is left: %s", d)
			}
		}
		if len(dirs) != len(spare) {
			return fmt.Errorf("socket directories %v, want one per spare (%d)", dirs, len(spare))
		}
		if cg != nil {
			groups, err := filepath.Glob(filepath.Join(cg.root, "p*"))
			if err != nil {
				return err
			}
			if len(groups) != len(spare) {
				return fmt.Errorf("cgroups %v, want one per spare (%d)", groups, len(spare))
			}
		}
		return nil
	})
}
