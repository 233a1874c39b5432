package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// endSteps is the order runEnd.end documents.
var endSteps = []string{"heartbeat", "timers", "cancel", "refill", "demand", "context", "record", "observe", "live", "slot", "process", "dirs", "worker"}

// How far a run got before it failed: what it had taken.
type runStage int

const (
	stageSlot    runStage = iota // the agent's slot and the live entry; the store refused the run's row
	stageRow                     // its row and recorder too; its dirs could not be made
	stageSetup                   // its dirs and its demand on the pool; its process did not start
	stageProcess                 // its process, timers and heartbeat watcher: it was running
)

// endObserver counts what the supervisor reports to the daemon's metrics.
type endObserver struct {
	nopObserver
	mu      sync.Mutex
	ended   []api.RunState
	stopped int
}

func (o *endObserver) RunEnded(_, _ string, state api.RunState, _ time.Duration, _ backend.Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, state)
}

func (o *endObserver) PluginStopped(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped++
}

// A run can fail at any point: its end gives back all it took, in one
// order, and records it with the right outcome. The steps are those Run
// and runPlugin take, with a sleep standing in for the plugin process.
func TestRunEndLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		stage    runStage
		err      error
		cancel   bool // the caller's context ended (a cancel, the daemon stopping)
		stopping bool // the daemon's lifetime ended too
		panics   bool // a step of the end panics
		want     api.RunState
		says     string
	}{
		"store refuses the run":    {stage: stageSlot, err: errors.New("database is locked")},
		"run dirs cannot be made":  {stage: stageRow, err: errors.New("mkdir runs: no space left on device"), want: api.RunFailed, says: "no space left"},
		"process does not start":   {stage: stageSetup, err: errors.New("start mock plugin: fork/exec: permission denied"), want: api.RunFailed, says: "permission denied"},
		"handshake fails":          {stage: stageSetup, err: errors.New("start mock plugin: no handshake within 10 s"), want: api.RunFailed, says: "no handshake"},
		"plugin crashes mid-run":   {stage: stageProcess, err: errors.New("mock plugin process exited (exit code 3) before finishing the run: EOF"), want: api.RunFailed, says: "exit code 3"},
		"run timeout":              {stage: stageProcess, err: fmt.Errorf("mock backend killed after 30m0s (%w)", errRunTimeout), want: api.RunTimedOut, says: "run timeout"},
		"idle timeout":             {stage: stageProcess, err: fmt.Errorf("mock backend killed after 5m0s (%w)", errIdleTimeout), want: api.RunFailed, says: "idle timeout"},
		"cancelled":                {stage: stageProcess, err: errors.New("run cancelled: context canceled"), cancel: true, want: api.RunCancelled, says: "cancelled"},
		"daemon stops":             {stage: stageProcess, err: errors.New("run cancelled: the daemon is stopping"), cancel: true, stopping: true, want: api.RunCancelled, says: "daemon is stopping"},
		"a step of the end panics": {stage: stageProcess, err: errors.New("model overloaded"), panics: true, want: api.RunFailed, says: "model overloaded"},
		"succeeds":                 {stage: stageProcess, want: api.RunSucceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "agent-worker.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := db.CreateWorkflow(ctx, store.Workflow{Name: "wf", Tag: "main"}); err != nil {
				t.Fatal(err)
			}
			agent := store.Agent{Name: "alice", Workflow: "wf", Tag: "main", Backend: "mock"}
			if _, err := db.CreateAgent(ctx, agent); err != nil {
				t.Fatal(err)
			}
			life, stop := context.WithCancel(ctx)
			defer stop()
			obs := &endObserver{}
			home, runtime := t.TempDir(), t.TempDir()
			s := NewSupervisor(db, nil, home, runtime, func() string { return "" }, SupervisorConfig{Observer: obs, Lifetime: life}, hclog.NewNullLogger())
			runCtx, cancelRun := context.WithCancel(ctx)
			defer cancelRun()
			spec := runspec.RunSpec{ID: runspec.NewRunID(), Agent: agent}
			e, proc, rs := takeUpTo(t, s, runCtx, spec, tc.stage)
			var steps []string
			e.trace = func(step string) { steps = append(steps, step) }
			if tc.panics {
				e.refill = func() { panic("refill broke") }
			}
			if tc.cancel {
				cancelRun()
			}
			if tc.stopping {
				stop()
			}
			var out runspec.Outcome
			if tc.stage >= stageRow {
				out.Run.ID = spec.ID
			}
			panicked := func() (p any) {
				defer func() { p = recover() }()
				err = e.end(runCtx, spec, &out, tc.err)
				return nil
			}()
			if tc.panics != (panicked != nil) {
				t.Errorf("end panicked with %v; want a panic: %v", panicked, tc.panics)
			}

			// Released in the documented order, every step of what was taken.
			want := map[runStage][]string{stageSlot: {"live", "slot"}, stageRow: {"context", "record", "observe", "live", "slot"},
				stageSetup: {"refill", "demand", "context", "record", "observe", "live", "slot", "dirs"}, stageProcess: endSteps}[tc.stage]
			if !slices.Equal(steps, want) {
				t.Errorf("end steps = %v, want %v", steps, want)
			}
			if tc.err != nil && !errors.Is(err, tc.err) && !tc.panics {
				t.Errorf("end returned %v, want the run's error %v", err, tc.err)
			}
			if tc.err == nil && err != nil {
				t.Errorf("end of a successful run returned %v", err)
			}
			// Nothing left: slot, live entry, timers, demand, process,
			// socket and run dirs, workers row.
			if _, busy := s.running[agent.Key()]; busy {
				t.Error("the agent's slot was not given back: it cannot run again")
			}
			if _, live := s.live.runs[spec.ID]; live {
				t.Error("the run is still live: a follower waits for ever")
			}
			if s.timers.get(spec.ID) != nil {
				t.Error("the run's timers are still registered")
			}
			if n := s.spares.Runs("mock"); n != 0 {
				t.Errorf("the backend still counts %d runs under way", n)
			}
			if proc != nil {
				testkit.WaitGone(t, proc.pid)
				if _, err := os.Stat(proc.sockDir); !os.IsNotExist(err) {
					t.Errorf("socket dir %s left: %v", proc.sockDir, err)
				}
				if obs.stopped != 1 {
					t.Errorf("the Observer heard %d plugin stops, want 1", obs.stopped)
				}
			}
			if rs.workDir != "" {
				if _, err := os.Stat(rs.workDir); !os.IsNotExist(err) {
					t.Errorf("run dir %s left: %v", rs.workDir, err)
				}
			}
			if ws, err := db.ListWorkers(context.Background()); err != nil || len(ws) != 0 {
				t.Errorf("workers rows left: %+v, %v", ws, err)
			}
			// Recorded with the right outcome, and heard by the metrics.
			r, events, err := db.GetRun(context.Background(), spec.ID)
			if tc.stage == stageSlot {
				if err == nil {
					t.Errorf("a run whose row was refused is recorded: %+v", r)
				}
				return
			}
			if err != nil || r.State != tc.want || !strings.Contains(r.Error, tc.says) {
				t.Errorf("run recorded as %+v, %v; want %s saying %q", r, err, tc.want, tc.says)
			}
			if len(events) == 0 {
				t.Error("the run's last events were not written: its transcript is empty")
			}
			if !slices.Equal(obs.ended, []api.RunState{tc.want}) {
				t.Errorf("the Observer heard the run end as %v, want %s", obs.ended, tc.want)
			}
		})
	}
}

// takeUpTo takes what Run and runPlugin take, in their order, up to stage,
// and returns the run's end with them recorded: its process (a sleep in a
// process group of its own) and its setup, if taken.
func takeUpTo(t *testing.T, s *Supervisor, ctx context.Context, spec runspec.RunSpec, stage runStage) (*runEnd, *process, runSetup) {
	t.Helper()
	key := spec.Agent.Key()
	log := hclog.NewNullLogger()
	e := &runEnd{s: s, runID: spec.ID, key: key, log: log}
	s.running[key] = spec.ID
	e.slot = true
	s.live.begin(spec.ID)
	e.live = true
	if stage < stageRow {
		return e, nil, runSetup{}
	}
	var err error
	if _, _, err = s.db.StartRunWithToken(ctx, store.Run{ID: spec.ID, Agent: key, Backend: spec.Agent.Backend}); err != nil {
		t.Fatal(err)
	}
	e.started = time.Now()
	e.rec = newRecorder(s.db, spec.ID, log, nil)
	e.rec.add(backend.Event{Kind: backend.EventText, Text: "working"})
	e.rc = s.readRunContext(ctx, spec, log)
	if stage < stageSetup {
		return e, nil, runSetup{}
	}
	rs, err := s.prepare(ctx, spec.Agent, spec.ID, "token")
	if err != nil {
		t.Fatal(err)
	}
	e.setup = rs.cleanup
	e.demand = s.spares.Demand(spec.Agent.Backend)
	e.refill = s.spares.Refiller(api.Plugin{Name: spec.Agent.Backend})
	if stage < stageProcess {
		return e, nil, rs
	}
	sockDir, err := catalog.MakeSocketDir(s.runtime, "run")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaped once killed
	proc := &process{client: goplugin.NewClient(&goplugin.ClientConfig{Cmd: cmd}), cmd: cmd, pid: cmd.Process.Pid, sockDir: sockDir}
	if err := s.db.AddWorker(ctx, store.Worker{RunID: spec.ID, PID: proc.pid, PGID: proc.pid, PluginPath: "/bin/sleep"}); err != nil {
		t.Fatal(err)
	}
	e.proc = proc
	runCtx, cancel := context.WithCancelCause(ctx)
	e.cancel = cancel
	deadline := time.AfterFunc(time.Hour, func() { cancel(errRunTimeout) })
	idle := time.AfterFunc(time.Hour, func() { cancel(errIdleTimeout) })
	forget := s.timers.put(spec.ID, &runTimers{idle: idle, deadline: deadline})
	e.timers = func() { forget(); idle.Stop(); deadline.Stop() }
	hbCtx, stopHeartbeat := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); <-hbCtx.Done() }()
	e.heartbeat = func() { stopHeartbeat(); <-hbDone }
	return e, proc, rs
}
