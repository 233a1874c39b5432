package runner

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/host/prices"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/store"
)

// Supervisor defaults.
const (
	DefaultRunTimeout  = 30 * time.Minute
	DefaultIdleTimeout = 5 * time.Minute
	killGrace          = 3 * time.Second
	// stopGrace is how long a plugin whose run was cancelled or timed
	// out has to stop the processes it started (a CLI told to end its
	// turn, e.g. ACP's session/cancel) before its group is signalled.
	stopGrace  = 6 * time.Second
	flushEvery = 200 * time.Millisecond
	exitWait   = 2 * time.Second
)

// DefaultHeartbeatTimeout is how long a run's heartbeat may go stale before
// its plugin process counts as dead.
const DefaultHeartbeatTimeout = 60 * time.Second

// Errors that end a run from the daemon's side.
var (
	errRunTimeout  = errors.New("run timeout")
	errIdleTimeout = errors.New("idle timeout")
)

// SupervisorConfig tunes run supervision; zero values take the defaults.
type SupervisorConfig struct {
	// Tracing gives each run its invoke_agent span (off when nil).
	Tracing     *telemetry.Telemetry
	RunTimeout  time.Duration // a whole run
	IdleTimeout time.Duration // no event from the backend for this long
	// HeartbeatTimeout: the plugin process neither sent an event nor
	// answered a ping for this long (it is stopped, wedged or gone).
	HeartbeatTimeout time.Duration
	// Observer hears each run's end and each plugin process (the
	// daemon's metrics); nil hears nothing.
	Observer Observer
	// Context reads what each run is shown at its start, sent with its
	// request; nil sends none (the worker fetches it over MCP).
	Context ContextSource
	// Spares is how many warm spare processes to keep per backend in
	// use; nil is spares.DefaultCounts (one each).
	Spares *spares.Counts
	// MaxRuns is how many runs the scheduler lets go at once (its
	// MaxConcurrent): a pool grows with its backend's recent demand up to
	// it, never past the pool's bound. 0 leaves pools at their Spares size.
	MaxRuns int
	// SpareIdle stops a backend's spares after it has had no run for this
	// long (default spares.DefaultIdle).
	SpareIdle time.Duration
	// Worktrees gives agents of a workflow with a git workspace a
	// worktree of their own as their project directory; nil: none does.
	Worktrees ProjectDirs
	// Lifetime ends when the daemon stops: until then, the writes that end
	// a run wait out a store outage instead of being dropped (nil: the
	// background context, which never ends).
	Lifetime context.Context
	// Sandbox decides each run's policy and confines its process tree;
	// nil: runs are not confined.
	Sandbox *sandbox.Sandbox
	// Cgroups gives every plugin process a cgroup of its own, killed
	// whole with it; nil: the process group alone.
	Cgroups *Cgroups
	// RunLimits are a run's limits where its agent sets none (the
	// daemon's --run-limits); a field left zero is DefaultRunLimits'.
	RunLimits backend.RunLimits
	// Evidence turns each run's events into observations of its agent's
	// effort as they stream; nil observes nothing.
	Evidence Evidence
}

// Evidence is what the runner needs of the daemon's gate
// (host/gate.Gate.Watch): for each run, a function that hears its events
// in order, from the run's one event loop, and records what the run's
// tools were seen doing.
type Evidence interface {
	Watch(k store.AgentKey, runID, dir string) func(ctx context.Context, e backend.Event)
	// Ended says the run's events are over.
	Ended(runID string)
}

// DefaultRunLimits are a run's limits unless the daemon or the agent
// says otherwise: 4096 tasks (processes and threads, which pids.max
// counts alike) stop a fork bomb long before the machine's pid_max
// (32768 at the least), yet leave room for a real CLI (node has a dozen
// threads), its MCP servers and `go test ./...` or npm on a large machine
// (each compiler or test process has up to GOMAXPROCS threads); memory
// and CPU are the operator's to split between runs, unlimited by default.
var DefaultRunLimits = backend.RunLimits{Pids: 4096, Memory: backend.Unlimited, CPU: backend.Unlimited}

// ProjectDirs gives an agent a working directory of its own instead of
// its workflow's (host/worktrees.Service: a git worktree). ok is false when
// the workflow has none, and the default applies.
type ProjectDirs interface {
	ProjectDir(ctx context.Context, wf store.Workflow, agent string) (dir string, ok bool, err error)
	// RepoDirs are wf's repositories (workspace.repos) for a run of
	// agent: a git one at the agent's own worktree of it.
	RepoDirs(ctx context.Context, wf store.Workflow, agent string) ([]backend.Repo, error)
}

// Observer hears what the run supervisor does, for the daemon's metrics
// (host/metrics.Metrics). Its methods must return at once.
type Observer interface {
	RunEnded(backendName, workflow string, state api.RunState, d time.Duration, u backend.Usage)
	PluginStarted(kind string)
	PluginStopped(kind string)
	PluginRestarted(kind, name string)
	// SpareEvent hears a warm spare of a backend start, be taken by a
	// run or be killed unused, and a run that started its process cold.
	SpareEvent(backendName string, e api.SpareEvent)
	// SandboxRefused hears a run report something its sandbox refused.
	SandboxRefused(workflow, agent string)
}

// nopObserver is the Observer of a part given none.
type nopObserver struct{}

func (nopObserver) RunEnded(string, string, api.RunState, time.Duration, backend.Usage) {}
func (nopObserver) PluginStarted(string)                                                {}
func (nopObserver) PluginStopped(string)                                                {}
func (nopObserver) PluginRestarted(string, string)                                      {}
func (nopObserver) SpareEvent(string, api.SpareEvent)                                   {}
func (nopObserver) SandboxRefused(string, string)                                       {}

// staleError ends a run whose heartbeat went stale.
type staleError struct{ limit time.Duration }

func (e staleError) Error() string { return "no heartbeat for " + seconds(e.limit) }

// seconds formats d the way the run's error says it: "60 s", "1.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// Supervisor runs every agent run as a fresh backend plugin process and
// makes sure it ends: a run timeout, an idle timeout, SIGTERM then SIGKILL
// of the whole process group, and a workers row so that a restarted daemon
// can reap what a crashed one left behind.
type Supervisor struct {
	db      *store.DB
	catalog *catalog.Catalog
	log     hclog.Logger
	cfg     SupervisorConfig
	home    string
	// dirs is definedDirs as last read, for its ConfigGeneration.
	dirsMu  sync.Mutex
	dirs    *definedDirs
	runtime string // parent of the per-run socket dirs
	mcpURL  func() string

	// mu guards running: one run per agent at a time.
	mu      sync.Mutex
	running map[store.AgentKey]string

	// live tells followers of a run's transcript when it grows and ends.
	live liveRuns

	// spares are the warm plugin processes waiting for a run.
	spares *spares.Pool[*process]

	// timers are the runs' timeouts, which stop while a run waits for a
	// person (Waiting).
	timers timerSet

	// traces maps a run in flight to its span's traceparent (Traceparent).
	traces sync.Map
}

// Traceparent is the span of run id while it runs ("" when it is not
// running or tracing is off): the MCP server's tool calls are its
// children.
func (s *Supervisor) Traceparent(id string) string {
	tp, _ := s.traces.Load(id)
	tp2, _ := tp.(string)
	return tp2
}

// NewSupervisor returns a supervisor; mcpURL gives the daemon's MCP address.
func NewSupervisor(db *store.DB, catalog *catalog.Catalog, home, runtime string, mcpURL func() string, cfg SupervisorConfig, log hclog.Logger) *Supervisor {
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Spares == nil {
		cfg.Spares = &spares.DefaultCounts
	}
	if cfg.SpareIdle <= 0 {
		cfg.SpareIdle = spares.DefaultIdle
	}
	if cfg.Lifetime == nil {
		cfg.Lifetime = context.Background()
	}
	cfg.RunLimits = cfg.RunLimits.Over(DefaultRunLimits)
	s := &Supervisor{db: db, catalog: catalog, log: log, cfg: cfg, home: home, runtime: runtime, mcpURL: mcpURL, running: map[store.AgentKey]string{}}
	s.spares = spares.New(spares.Config[*process]{Counts: *cfg.Spares, Idle: cfg.SpareIdle, MaxRuns: cfg.MaxRuns, Catalog: catalog,
		Start: s.startSpare, Kill: s.killSpare, Event: cfg.Observer.SpareEvent, Log: log})
	return s
}

// Limits are a run's limits where its agent sets none.
func (s *Supervisor) Limits() backend.RunLimits { return s.cfg.RunLimits }

// Run runs one attempt of an agent run. The run is recorded in
// runs/run_events whatever happens. A returned error is retryable unless
// backend.IsPermanent says otherwise.
func (s *Supervisor) Run(ctx context.Context, spec runspec.RunSpec) (out runspec.Outcome, err error) {
	agent, attempt, onEvent := spec.Agent, spec.Attempt, spec.OnEvent
	key := agent.Key()
	if agent.Backend == "external" {
		return out, backend.Permanent(api.Errorf(api.CodeInvalid, "%s has backend external: an outside MCP client acts as it, the daemon never runs it", key))
	}
	if box := s.cfg.Sandbox; box != nil && !agent.Config.Sandbox.Off() {
		if err := box.Refusal(); err != nil {
			return out, backend.Permanent(err)
		}
	}
	p, err := s.catalog.Lookup(plugin.KindBackend, agent.Backend)
	if err != nil {
		return out, backend.Permanent(err)
	}
	runID := spec.ID
	if runID == "" {
		runID = runspec.NewRunID()
	}
	// The run's span: a child of the message that woke it (its sender's
	// trace), linked to every message it answers; ended last, with how
	// the run ended as recorded.
	ctx, span := s.cfg.Tracing.Agent(ctx, telemetry.AgentRun{RunID: runID, Workflow: agent.Workflow, Tag: agent.Tag,
		Agent: agent.Name, Backend: agent.Backend, Model: agent.Model, Attempt: attempt, Causes: causes(spec.Inbox)})
	if tp := telemetry.Traceparent(ctx); tp != "" {
		s.traces.Store(runID, tp)
	}
	calls := newCallTrace(ctx, s.cfg.Tracing, span, agent, spec.Inbox)
	defer func() {
		s.traces.Delete(runID)
		calls.end()
		telemetry.EndAgent(span, telemetry.RunEnd{Outcome: cmp.Or(string(out.Run.State), "not_started"), InputTokens: out.Usage.InputTokens,
			OutputTokens: out.Usage.OutputTokens, CostUSD: out.Usage.CostUSD, Err: err})
	}()
	// Everything the run takes is recorded in re and given back by its
	// end, in one order (runEnd.end), whatever way the run ends; Run
	// returns once its process is gone.
	log := s.log.With("run", runID, "agent", key.String())
	re := &runEnd{s: s, runID: runID, key: key, log: log}
	defer func() { err = re.end(ctx, spec, &out, err) }()
	s.mu.Lock()
	if other, busy := s.running[key]; busy {
		s.mu.Unlock()
		return out, api.Errorf(api.CodeConflict, "%s is already running (%s): wait for it to finish", key, other)
	}
	s.running[key] = runID
	re.slot = true
	s.mu.Unlock()

	until := spec.InboxUntil
	resume, err := s.db.Session(ctx, key, agent.Backend)
	if err != nil {
		return out, err
	}
	// Registered before the row exists and ended after its end is
	// recorded, so a follower that finds the run not live reads it final.
	s.live.begin(runID)
	re.live = true
	// The run's token is minted with its row: the run's end (finish)
	// revokes it, whatever way the run ends.
	var token string
	out.Run, token, err = s.db.StartRunWithToken(ctx, store.Run{ID: runID, Agent: key, Backend: agent.Backend,
		PluginSHA256: p.SHA256, Attempt: attempt, InboxUntilSeq: until, Traceparent: telemetry.Traceparent(ctx)})
	if err != nil {
		return out, err
	}
	log.Info("run started", "backend", agent.Backend, "attempt", attempt, "inbox_until", until)
	re.started = time.Now()
	rec := newRecorder(s.db, runID, log, func() { s.live.changed(runID) })
	re.rec = rec
	rec.addPrompt(agent.System, until, spec.Inbox)
	rc := s.readRunContext(ctx, spec, log) // while the plugin process starts
	re.rc = rc

	err = s.runPlugin(ctx, agent, attempt, resume, p, runID, token, rc, log, re, spec.OnStart, func(e backend.Event) {
		out.Events++
		switch e.Kind {
		case backend.EventResult:
			out.Result = e.Text
		case backend.EventUsage:
			if e.Usage != nil {
				out.Usage = *e.Usage
			}
		case backend.EventSandbox:
			s.cfg.Observer.SandboxRefused(agent.Workflow, agent.Name)
		case backend.EventSession:
			out.SessionID = e.SessionID
			// Saved at once: a run that fails later still leaves a
			// conversation the next attempt can resume. Saved only over
			// the session this run started from, so a reset meanwhile
			// stays a reset.
			saved, err := s.db.ReplaceSession(context.WithoutCancel(ctx), key, agent.Backend, resume, e.SessionID)
			switch {
			case err != nil:
				log.Warn("save session", "error", err)
			case saved:
				resume = e.SessionID
			default:
				log.Info("session not saved: the agent was reset during the run")
			}
		}
		calls.event(e)
		rec.add(e)
		if onEvent != nil {
			onEvent(e)
		}
	})
	return out, runError(err)
}

// finish records how a run ended: a successful run is settled by the
// caller's Settle (ack, reply and run end in one transaction); anything
// else, a failed settle included, is recorded here with its error. It
// returns the run's error, which a failed settle replaces.
func (s *Supervisor) finish(ctx context.Context, spec runspec.RunSpec, out *runspec.Outcome, err error, log hclog.Logger) error {
	ru := prices.Prices.RunUsage(spec.Agent.Model, out.Usage)
	out.Usage.CostUSD = ru.CostUSD
	usage, _ := json.Marshal(ru)
	if err == nil && spec.Settle != nil {
		if err = spec.Settle(context.WithoutCancel(ctx), *out, usage); err == nil {
			out.Run.State = api.RunSucceeded
			log.Info("run finished and settled", "state", out.Run.State, "events", out.Events)
			return nil
		}
		log.Warn("settle run", "error", err)
	}
	// Not settled: the transcript's last events go first, then the end.
	if werr := s.db.AppendRunEvents(context.WithoutCancel(ctx), out.Run.ID, out.Unwritten); werr != nil {
		log.Error("record run events", "error", werr, "events", len(out.Unwritten))
	}
	state, msg := api.RunSucceeded, ""
	switch {
	case err != nil && ctx.Err() != nil:
		state, msg = api.RunCancelled, err.Error()
	case errors.Is(err, errRunTimeout):
		// Told apart from a failure in the record; the scheduler still
		// counts it as a failed attempt and retries it.
		state, msg = api.RunTimedOut, err.Error()
	case err != nil:
		state, msg = api.RunFailed, err.Error()
	}
	ferr := store.UntilReachable(s.cfg.Lifetime, func(ctx context.Context) error {
		return s.db.FinishRun(ctx, out.Run.ID, state, msg, usage)
	}, func(err error) {
		log.Warn("record run end: the store is unreachable; retrying until it is back", "error", err)
	})
	if ferr != nil {
		log.Error("record run end", "error", ferr)
	}
	out.Run.State, out.Run.Error = state, msg
	log.Info("run finished", "state", state, "error", msg, "events", out.Events)
	return err
}

// observeEnd reports a run's end, as finish recorded it, to the Observer.
func (s *Supervisor) observeEnd(agent store.Agent, out *runspec.Outcome, start time.Time) {
	s.cfg.Observer.RunEnded(agent.Backend, agent.Workflow, out.Run.State, time.Since(start), out.Usage)
}

// runPlugin starts the plugin process, runs the backend in it and stops it.
func (s *Supervisor) runPlugin(ctx context.Context, agent store.Agent, attempt int, resume string, p api.Plugin, runID, token string, rc *runContext, log hclog.Logger,
	e *runEnd, onStart func(string), emit func(backend.Event)) error {
	agent.Config.Env = namedEnv(agent.Config, os.Getenv)
	rs, err := s.prepare(ctx, agent, runID, token)
	if err != nil {
		return err
	}
	e.setup = rs.cleanup
	if s.cfg.Evidence != nil {
		// Observed before the event is recorded: what a run did is
		// evidence by the time anyone can read that it did it.
		watch, record := s.cfg.Evidence.Watch(agent.Key(), runID, rs.projectDir), emit
		defer s.cfg.Evidence.Ended(runID)
		obsCtx := context.WithoutCancel(ctx)
		emit = func(ev backend.Event) {
			watch(obsCtx, ev)
			record(ev)
		}
	}

	e.demand = s.spares.Demand(p.Name) // ended after the refill: a busy backend's pool grows
	refill := s.spares.Refiller(p)
	e.refill = refill // at the latest; normally at the first event, below
	confine := s.runConfinement(agent, rs)
	proc, err := s.runProcess(ctx, agent, p, rs, confine, runID, log)
	if err != nil {
		return err
	}
	s.cfg.Observer.PluginStarted(plugin.KindBackend)
	e.proc = proc
	client, cmd, rpc, be, pid := proc.client, proc.cmd, proc.rpc, proc.be, proc.pid
	limits := s.cfg.RunLimits
	if l := agent.Config.Limits; l != nil {
		limits = l.Over(limits)
	}
	if err := s.cfg.Cgroups.limit(proc.group, limits); err != nil {
		log.Warn("write the run's limits to its cgroup", "limits", limits.String(), "error", err)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	e.cancel = cancel
	deadline := time.AfterFunc(s.cfg.RunTimeout, func() { cancel(errRunTimeout) })
	idle := time.AfterFunc(s.cfg.IdleTimeout, func() { cancel(errIdleTimeout) })
	timers := &runTimers{idle: idle, idleLimit: s.cfg.IdleTimeout, deadline: deadline, deadlineAt: time.Now().Add(s.cfg.RunTimeout)}
	forget := s.timers.put(runID, timers)
	e.timers = func() { forget(); idle.Stop(); deadline.Stop() }
	hbCtx, stopHeartbeat := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		s.watchHeartbeat(hbCtx, runID, rpc, cancel, log)
	}()
	e.heartbeat = func() { stopHeartbeat(); <-hbDone }

	req := backend.Request{
		RunID: runID, Attempt: attempt,
		Agent: backend.Agent{Name: agent.Name, Workflow: agent.Workflow, Tag: agent.Tag,
			Model: agent.Model, System: agent.System, Config: rs.config},
		Daemon:        backend.MCPServer{Name: "agent-worker", URL: s.mcpURL(), Headers: map[string]string{"Authorization": "Bearer " + rs.token}},
		MCPServers:    agent.Config.MCPServerList(),
		WorkDir:       rs.workDir,
		ProjectDir:    rs.projectDir,
		Repos:         rs.repos,
		ResumeSession: resume,
		StateDir:      rs.stateDir,
		Env:           runEnv(agent.Config.Env, s.cfg.Tracing.RunEnv(telemetry.Traceparent(ctx))),
		RunContext:    rc.get(),
		ProcessKey:    proc.key,
	}
	e.rec.addContext(req.RunContext)
	if proc.confined {
		// A process started for this run was started under its policy; a
		// spare narrows its base layer to it itself.
		req.Sandbox, req.SandboxApplied = proc.policy, true
		if proc.spare {
			req.Sandbox, _, _ = confine(proc.path, proc.sockDir) // it fitted: no error
			req.SandboxApplied = false
		}
		log.Debug("run confined", "policy", sandbox.String(req.Sandbox), "spare", proc.spare)
	}
	if onStart != nil {
		onStart(runID)
	}
	runErr := be.Run(runCtx, req, backend.EventsFunc(func(e backend.Event) error {
		if runCtx.Err() != nil {
			return context.Cause(runCtx)
		}
		timers.mu.Lock()
		if timers.waits == 0 { // a run waiting for approval keeps its timeouts stopped
			idle.Reset(s.cfg.IdleTimeout)
		}
		timers.mu.Unlock()
		refill()
		emit(e)
		return nil
	}))

	hit := proc.group.exceeded()
	if hit != "" {
		emit(backend.Event{Kind: backend.EventLog, Text: hit})
	}
	if err := s.stoppedBy(ctx, runCtx, agent.Backend, pid, log); err != nil {
		if hit != "" {
			err = fmt.Errorf("%w (and %s)", err, hit)
		}
		return err
	}
	if runErr != nil && waitExited(client) {
		runErr = fmt.Errorf("%s plugin process exited (%s) before finishing the run: %w", agent.Backend, exitReason(cmd), runErr)
	}
	if hit != "" {
		// Whatever the run made of it, it worked with forks refused or
		// processes killed: its result cannot be trusted. Not retried:
		// the same agent on the same messages hits the same limit.
		log.Warn("run hit its limits", "limits", limits.String(), "why", hit)
		if runErr != nil {
			return backend.Permanent(fmt.Errorf("%s: %w", hit, runErr))
		}
		return backend.Permanent(errors.New(hit))
	}
	return runErr
}

// runProcess gives a run its plugin process: a warm spare of the same
// binary when one is ready (its workers row becomes the run's), otherwise
// one started now with the agent's environment in its project directory.
// The workers row goes after the process is killed (runEnd), so a daemon
// that dies before that still finds the process to reap.
func (s *Supervisor) runProcess(ctx context.Context, agent store.Agent, p api.Plugin, rs runSetup, c confinement, runID string, log hclog.Logger) (*process, error) {
	if proc, id, ok := s.takeSpare(p, c); ok {
		if err := s.db.ClaimSpare(ctx, id, runID); err != nil {
			proc.stop()
			_ = s.db.RemoveWorker(context.WithoutCancel(ctx), id)
			return nil, err
		}
		log.Debug("run takes a warm spare", "pid", proc.pid, "spare", id)
		return proc, nil
	}
	s.spares.ColdStart(p.Name)
	proc, err := s.startProcess(p, "run", rs.projectDir, agent.Config.EnvList(), c, log)
	if err != nil {
		return nil, err
	}
	if err := s.db.AddWorker(ctx, store.Worker{RunID: runID, PID: proc.pid, PGID: proc.pid, PluginPath: proc.path, PluginSHA256: p.SHA256}); err != nil {
		proc.stop()
		return nil, err
	}
	return proc, nil
}

// process is a started backend plugin process, handshaken, its backend
// dispensed: a run's, or a warm spare waiting for one.
type process struct {
	client  *goplugin.Client
	cmd     *exec.Cmd
	rpc     goplugin.ClientProtocol
	be      backend.Backend
	pid     int
	path    string // the file it executes: the plugin's verified copy
	sockDir string
	// policy is the sandbox layer the process was started under, if
	// confined; spare says it was started as a warm spare.
	policy   sb.Policy
	confined bool
	spare    bool
	release  func() // ends the confined thread that started it; nil if none
	// key is the secret the process was started with, which its run's
	// request carries: a run can reach a spare's socket (Landlock does
	// not filter unix sockets by path), never its key.
	key string
	// group is its cgroup, killed with it; nil without cgroups.
	group *cgroup
}

// PID is the process's, and its process group's, id.
func (p *process) PID() int { return p.pid }

// Exited reports whether the process has ended.
func (p *process) Exited() bool { return p.client.Exited() }

var _ spares.Process = (*process)(nil)

// stop kills the process's whole group and removes its socket directory.
func (p *process) stop() {
	catalog.Kill(p.client, p.cmd)
	p.group.kill() // what left the process group (setsid) dies too
	catalog.RemoveSocketDir(p.sockDir)
	if p.release != nil {
		p.release() // the process is gone: its starting thread may end
	}
}

// startProcess starts p's verified copy for use ("run" or "spare") in dir
// (for an empty dir, its own socket directory, which holds nothing else)
// with env over the daemon's base environment. Nothing is hashed here: the
// catalog hashed the copy's bytes when it wrote them, and a copy changed
// since is refused.
func (s *Supervisor) startProcess(p api.Plugin, use, dir string, env []string, c confinement, log hclog.Logger) (*process, error) {
	exe, err := s.catalog.Verified(p)
	if err != nil {
		return nil, err
	}
	sockDir, err := catalog.MakeSocketDir(s.runtime, use)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		dir = sockDir
	}
	key := newProcessKey()
	cmd := catalog.Command(exe, p.Path, sockDir, dir, append(env, backend.EnvProcessKey+"="+key)...)
	proc := &process{cmd: cmd, path: exe, sockDir: sockDir, spare: use == "spare", key: key, group: s.cfg.Cgroups.enter(cmd)}
	if proc.group == nil {
		// No cgroup to kill whole: the process reaps what its run leaves.
		cmd.Env = append(cmd.Env, backend.EnvSubreaper+"=1")
	}
	if proc.policy, proc.confined, err = c(exe, sockDir); err != nil {
		catalog.RemoveSocketDir(sockDir)
		return nil, backend.Permanent(err)
	}
	client := goplugin.NewClient(pluginclient.ClientConfig(cmd, log.Named(p.Name)))
	proc.client = client
	var rpc goplugin.ClientProtocol
	start := func() (err error) { rpc, err = client.Client(); return err }
	if proc.confined {
		// Started from a thread confined to the policy, so the plugin's
		// first instruction already runs confined, and no plugin can
		// skip it; the thread lives as long as the process.
		proc.release, err = sb.StartConfined(proc.policy, start)
	} else {
		err = start()
	}
	proc.group.started()
	if err == nil {
		proc.group.join(cmd.Process.Pid) // v1 cgroups (limits_linux.go), before it runs anything
	}
	if err != nil {
		proc.stop()
		return nil, fmt.Errorf("start %s plugin: %w", p.Name, catalog.HandshakeError(err, pluginclient.StartTimeout))
	}
	proc.rpc, proc.pid = rpc, cmd.Process.Pid
	if proc.be, err = pluginclient.DispenseBackend(rpc); err != nil {
		proc.stop()
		return nil, err
	}
	return proc, nil
}

// namedEnv is the agent's env and the variables its definition names
// explicitly, from the daemon's environment: the provider's api_key_env
// reaches the agent's runs whatever its name, as env: does, while nothing
// outside the allow-list (pluginEnv) reaches any other agent's. A name
// env: sets keeps env:'s value; an unset name adds nothing (the backend
// says it is missing). The agent's own map is not changed.
func namedEnv(c backend.AgentConfig, getenv func(string) string) map[string]string {
	var names []string
	if c.Provider != nil && c.Provider.APIKeyEnv != "" {
		names = append(names, c.Provider.APIKeyEnv)
	}
	if len(names) == 0 {
		return c.Env
	}
	out := maps.Clone(c.Env)
	for _, name := range names {
		if _, set := out[name]; set {
			continue
		}
		if v := getenv(name); v != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// runEnv is the agent's env as its run's request carries it, less the
// variables the daemon sets for the process itself (its socket and temp
// directory), which win as they do for a process started for the run,
// with the run's trace context (telemetry.RunEnv) where env sets none.
func runEnv(env, traceEnv map[string]string) map[string]string {
	out := make(map[string]string, len(env)+len(traceEnv))
	for k, v := range traceEnv {
		out[k] = v
	}
	for k, v := range env {
		if k != "PLUGIN_UNIX_SOCKET_DIR" && k != "TMPDIR" {
			out[k] = v
		}
	}
	return out
}

// causes are the traceparents of the messages a run answers, oldest first.
func causes(inbox []store.Message) []string {
	var out []string
	for _, m := range inbox {
		if m.Traceparent != "" {
			out = append(out, m.Traceparent)
		}
	}
	return out
}

// runSetup is what one run is given before its process starts: its token for
// the daemon's MCP server, its directories and its config on the wire.
type runSetup struct {
	token, workDir, projectDir, stateDir string
	repos                                []backend.Repo
	config                               []byte
	cleanup                              func() // removes the per-run dirs (the run's end revokes the token)
}

func (s *Supervisor) prepare(ctx context.Context, agent store.Agent, runID, token string) (rs runSetup, err error) {
	key := agent.Key()
	var undo []func()
	rs.cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			rs.cleanup()
		}
	}()
	sent := agent.Config
	sent.Limits = nil // the daemon's to enforce, not the backend's to read
	if rs.config, err = json.Marshal(sent); err != nil {
		return rs, backend.Permanent(fmt.Errorf("%s: %w", key, err))
	}
	rs.token = token
	rs.workDir = filepath.Join(s.home, "runs", runID)
	if err = os.MkdirAll(rs.workDir, 0o700); err != nil {
		return rs, err
	}
	undo = append(undo, func() { os.RemoveAll(rs.workDir) })
	if rs.projectDir, err = s.projectDir(ctx, key); err != nil {
		return rs, err
	}
	if rs.repos, err = s.repoDirs(ctx, key); err != nil {
		return rs, err
	}
	rs.stateDir = filepath.Join(AgentStateDir(s.home, key), agent.Backend)
	return rs, os.MkdirAll(rs.stateDir, 0o700)
}

// stoppedBy reports why the daemon ended a run (a stale heartbeat, the run
// or idle timeout, the caller's cancel), after killing the plugin's whole
// process group; nil when the run ended on its own.
func (s *Supervisor) stoppedBy(ctx, runCtx context.Context, backendName string, pid int, log hclog.Logger) error {
	var stale staleError
	switch cause := context.Cause(runCtx); {
	case errors.As(cause, &stale):
		s.stopGroup(pid, log)
		return fmt.Errorf("%s backend killed: %w (its plugin process neither sent an event nor answered a ping; the limit is the daemon's --heartbeat-timeout)", backendName, stale)
	case errors.Is(cause, errRunTimeout), errors.Is(cause, errIdleTimeout):
		awaitChildren(pid, stopGrace)
		s.stopGroup(pid, log)
		limit := s.cfg.RunTimeout
		if errors.Is(cause, errIdleTimeout) {
			limit = s.cfg.IdleTimeout
		}
		return fmt.Errorf("%s backend killed after %s (%w): it stopped producing events or ran too long", backendName, limit, cause)
	case ctx.Err() != nil:
		awaitChildren(pid, stopGrace)
		s.stopGroup(pid, log)
		return fmt.Errorf("run cancelled: %w", context.Cause(ctx))
	}
	return nil
}

// AgentStateDir is where an agent's backends keep state across runs; the
// daemon removes it with the agent.
func AgentStateDir(home string, key store.AgentKey) string {
	return filepath.Join(home, "state", key.Workflow, key.Tag, key.Name)
}

// ProjectDir is where the agent works (see projectDir), for the tools
// that take paths relative to it (task_complete's artifacts).
func (s *Supervisor) ProjectDir(ctx context.Context, key store.AgentKey) (string, error) {
	return s.projectDir(ctx, key)
}

// projectDir is where the agent works: its git worktree when its workflow
// has a git workspace, else its workflow's directory, or for a standalone
// agent a workspace of its own (never the daemon's home, where
// daemon.json holds the admin token).
func (s *Supervisor) projectDir(ctx context.Context, key store.AgentKey) (string, error) {
	wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag)
	if err != nil {
		return "", err
	}
	if s.cfg.Worktrees != nil {
		if dir, ok, err := s.cfg.Worktrees.ProjectDir(ctx, wf, key.Name); ok || err != nil {
			return dir, err
		}
	}
	if wf.Workdir != "" {
		return wf.Workdir, nil
	}
	dir := agentWorkspace(s.home, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("agent workspace: %w", err)
	}
	return dir, nil
}

// repoDirs are the workspace repositories of a run of key (see
// ProjectDirs.RepoDirs); a daemon without git worktrees gives the plain
// ones and refuses a git one.
func (s *Supervisor) repoDirs(ctx context.Context, key store.AgentKey) ([]backend.Repo, error) {
	wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag)
	if err != nil || len(wf.Repos) == 0 {
		return nil, err
	}
	if s.cfg.Worktrees != nil {
		return s.cfg.Worktrees.RepoDirs(ctx, wf, key.Name)
	}
	out := make([]backend.Repo, 0, len(wf.Repos))
	for _, r := range wf.Repos {
		if r.Git {
			return nil, api.Errorf(api.CodeUnavailable, "repository %s of %s has git worktrees, which this daemon does not serve", r.Name, key.Scope())
		}
		out = append(out, backend.Repo{Name: r.Name, Path: r.Path, Write: r.Write})
	}
	return out, nil
}

// agentWorkspace is the working directory of an agent without a workflow
// directory: $AGENT_WORKER_HOME/workspaces/<wf>/<tag>/<agent>, which holds
// only what its runs write. It is kept when the agent is removed, since it
// holds the agent's work.
func agentWorkspace(home string, key store.AgentKey) string {
	return filepath.Join(home, "workspaces", key.Workflow, key.Tag, key.Name)
}

// watchHeartbeat keeps a run's heartbeat fresh while its plugin process
// answers pings, and ends the run (cancel with a staleError) once a ping
// fails and the heartbeat in the store, which events also refresh, is older
// than the limit. A ping proves the process alive even while its backend
// waits quietly on a model; whether the backend makes progress is the idle
// timeout's business. It returns when ctx ends.
func (s *Supervisor) watchHeartbeat(ctx context.Context, runID string, rpc goplugin.ClientProtocol, cancel context.CancelCauseFunc, log hclog.Logger) {
	limit := s.cfg.HeartbeatTimeout
	every := max(limit/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	alive := time.Now() // the last ping answered, which the store's record may not show
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pingCtx, done := context.WithTimeout(ctx, every)
		err := pluginclient.Ping(pingCtx, rpc)
		done()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			alive = time.Now()
			if err := s.db.Heartbeat(ctx, runID); err != nil {
				log.Warn("worker heartbeat", "error", err)
			}
			continue // alive, whatever the store says
		}
		// The store's heartbeat also counts the run's events. When it
		// cannot be read (the store is down, or another member took the
		// run back and removed it) the last answered ping decides: a
		// stale run is ended whatever the store did meanwhile.
		age, aerr := s.db.HeartbeatAge(ctx, runID)
		if aerr != nil {
			log.Warn("read worker heartbeat; going by the last answered ping", "error", aerr)
			age = time.Since(alive)
		}
		if age > limit {
			log.Warn("run's heartbeat is stale; killing its plugin", "age", age, "limit", limit, "ping", err)
			cancel(staleError{limit})
			return
		}
	}
}

// awaitChildren gives a plugin whose run's context ended up to grace to
// stop what it started: it returns once the plugin is alone in its
// process group (or gone). The group is signalled only after, so a CLI is
// told to end its turn by its plugin before the SIGTERM reaches it. A
// plugin that started nothing costs no wait.
func awaitChildren(pgid int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for groupHasOthers(pgid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling other processes' exit
	}
}

// groupHasOthers reports whether a process other than pgid is in process
// group pgid (/proc/<pid>/stat's fifth field).
func groupHasOthers(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		if f := strings.Fields(string(rest)); len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// stopGroup asks the plugin's process group to stop, then kills it. A
// stopped process (SIGSTOP, a debugger) is continued so that it can act on
// the SIGTERM.
func (s *Supervisor) stopGroup(pgid int, log hclog.Logger) {
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return // already gone
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	deadline := time.Now().Add(killGrace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling another process's exit
	}
	log.Warn("plugin ignored SIGTERM; killing its process group")
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitExited reports whether the plugin process has exited, giving it a
// moment: a broken stream usually means it is dying.
func waitExited(c *goplugin.Client) bool {
	deadline := time.Now().Add(exitWait)
	for !c.Exited() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // go-plugin offers no exit channel
	}
	return true
}

// exitReason says how a plugin process ended, in the words of a shell:
// "exit code 3" or "killed by signal SIGKILL".
func exitReason(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "unknown status"
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = strconv.Itoa(int(ws.Signal()))
		}
		return "killed by signal " + name
	}
	return "exit code " + strconv.Itoa(cmd.ProcessState.ExitCode())
}

// newProcessKey returns a fresh secret for one plugin process.
func newProcessKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Reap kills plugin processes a crashed daemon left behind and marks their
// runs failed. A recorded pid is killed only if it still runs the recorded
// plugin binary, so a reused pid is never hit.
func (s *Supervisor) Reap(ctx context.Context) error {
	workers, err := s.db.ListWorkers(ctx)
	if err != nil {
		return err
	}
	for _, w := range workers {
		KillLeftover(w, s.log)
		if err := s.db.RemoveWorker(ctx, w.RunID); err != nil {
			return err
		}
	}
	n, err := s.db.FailRunningRuns(ctx, "the daemon stopped during this run")
	if n > 0 {
		s.log.Warn("runs interrupted by a daemon stop marked failed", "runs", n)
	}
	return err
}

// KillLeftover kills the process group of a plugin process a dead daemon
// (or a dead cluster member on this host) left running, if the recorded pid
// still runs the recorded plugin binary, so a reused pid is never hit.
func KillLeftover(w store.Worker, log hclog.Logger) {
	if IsPluginProcess(w.PID, w.PluginPath) {
		log.Warn("killing plugin left by a previous daemon", "run", w.RunID, "state", w.State, "pid", w.PID, "daemon", w.Daemon)
		_ = syscall.Kill(-w.PGID, syscall.SIGKILL)
	}
}

// IsPluginProcess checks /proc/<pid>/exe against the file the plugin
// process executes, for the daemon's processes its verified copy (a
// removed copy shows as "<path> (deleted)").
func IsPluginProcess(pid int, path string) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return exe == path
}

// recorder batches a run's events into run_events and keeps the workers
// heartbeat fresh, so a chatty run costs a transaction per batch, not per
// event.
type recorder struct {
	db      *store.DB
	runID   string
	log     hclog.Logger
	flushed func()

	// mu guards the fields that follow.
	mu      sync.Mutex
	pending []store.RunEvent
	texts   []string // the text of each pending event, for coalescing
	n       int

	stop chan struct{}
	done chan struct{}
}

// newRecorder starts a recorder; flushed, if set, is called after each
// batch is stored (without the recorder's lock).
func newRecorder(db *store.DB, runID string, log hclog.Logger, flushed func()) *recorder {
	r := &recorder{db: db, runID: runID, log: log, flushed: flushed, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// maxTextEvent bounds one stored event, so a flood cannot fill the disk.
const maxTextEvent = 64 << 10

// maxSessionInTranscript is the longest session the transcript repeats: a
// CLI's session id, not a conversation memory.
const maxSessionInTranscript = 1 << 10

func (r *recorder) add(e backend.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Consecutive text deltas become one transcript entry: the transcript is
	// for reading, and a streaming model sends thousands of deltas.
	if last := len(r.pending) - 1; e.Kind == backend.EventText && last >= 0 && r.pending[last].Kind == string(backend.EventText) {
		if text := r.texts[last] + e.Text; len(text) <= maxTextEvent {
			r.texts[last] = text
			r.pending[last].Data = textData(text)
			return
		}
	}
	data, _ := json.Marshal(eventData(e))
	if len(data) > maxTextEvent {
		data, _ = json.Marshal(map[string]any{"truncated": len(data)})
	}
	r.n++
	r.pending = append(r.pending, store.RunEvent{N: r.n, Kind: string(e.Kind), Data: string(data), At: time.Now()})
	r.texts = append(r.texts, e.Text)
}

func textData(text string) string {
	b, _ := json.Marshal(map[string]string{"text": text})
	return string(b)
}

// eventData is the transcript form of an event: only the fields it uses.
func eventData(e backend.Event) any {
	switch {
	case e.Tool != nil:
		return e.Tool
	case e.Usage != nil:
		return e.Usage
	case len(e.SessionID) > maxSessionInTranscript:
		// A backend's whole memory (the sdk's) is in sessions already.
		return map[string]int{"session_bytes": len(e.SessionID)}
	case e.SessionID != "":
		return map[string]string{"session_id": e.SessionID}
	}
	return map[string]string{"text": e.Text}
}

func (r *recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return // what is left, the run's end writes (close)
		case <-t.C:
			if r.flush() {
				if err := r.db.Heartbeat(context.Background(), r.runID); err != nil {
					r.log.Warn("worker heartbeat", "error", err)
				}
			}
		}
	}
}

// flush writes pending events and reports whether there were any.
func (r *recorder) flush() bool {
	r.mu.Lock()
	batch := r.pending
	r.pending, r.texts = nil, nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	if err := r.db.AppendRunEvents(context.Background(), r.runID, batch); err != nil {
		r.log.Error("record run events", "error", err, "events", len(batch))
	}
	if r.flushed != nil {
		r.flushed()
	}
	return true
}

// close stops the recorder and returns the events it has not written, for
// the run's end to write in its own transaction.
func (r *recorder) close() []store.RunEvent {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := r.pending
	r.pending, r.texts = nil, nil
	return rest
}
