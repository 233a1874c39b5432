package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/agent-worker/agent-worker/host/agents"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/internal/fswatch"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// reloadDebounce waits out an editor's burst of events for one save.
const reloadDebounce = 200 * time.Millisecond

// Scheduler is what workflows need of the scheduler: to start, stop and
// re-read an agent's loop.
type Scheduler interface {
	Add(key store.AgentKey)
	Remove(key store.AgentKey)
	Reschedule(key store.AgentKey)
}

// Triggers checks a workflow's webhook triggers before it loads
// (host/triggers.Service): a trigger whose secret is not set is refused.
// It also keeps the reports deliveries armed, which the idle watch fires.
type Triggers interface {
	Check(path string, ts []workflow.Trigger) error
	// Pending reports whether scope has reports waiting for its team to
	// go idle.
	Pending(ctx context.Context, scope store.Scope) bool
	// Fire posts scope's pending reports, its team being idle.
	Fire(ctx context.Context, scope store.Scope)
}

// Worktrees resolves a workflow's git workspace when it loads, refusing
// one outside a repository or with a missing base, and tidies the
// worktrees of agents that stopped (host/worktrees).
type Worktrees interface {
	// Check resolves inst's workspace (the zero value without one); cur
	// is the workflow as it runs (zero on a start), whose bases a reload
	// keeps where the file names none.
	Check(ctx context.Context, inst *workflow.Instance, cur store.Workflow) (store.Workspace, error)
	// Release removes the worktrees of scope's stopped agents whose work
	// is merged, and keeps the others.
	Release(ctx context.Context, scope store.Scope)
}

// Config is what a Manager is built from.
type Config struct {
	DB       *store.DB
	Team     *team.Service
	Sched    Scheduler
	Triggers Triggers
	// Worktrees checks git workspaces and tidies them; nil: a workflow
	// with workspace: is refused.
	Worktrees Worktrees
	// Catalog answers which backend and docs plugins are installed.
	Catalog agents.Catalog
	// DefaultModel is the model of an sdk agent without one.
	DefaultModel string
	// Member is this daemon's id in a cluster, "" on the embedded store:
	// in a cluster a workflow's file is watched only by its owner, the
	// member that started it last.
	Member string
	Now    func() time.Time
	Log    hclog.Logger
	// Notify keeps each workflow's notify: webhooks and hears when a
	// team goes idle (host/notify); nil: notify: is not checked or kept.
	Notify Notifications
	// RequireSandbox (--sandbox required) refuses a workflow with an
	// agent whose sandbox is off.
	RequireSandbox bool
	// Tracing gives each kickoff its invoke_workflow span (off when nil).
	Tracing *telemetry.Telemetry
}

// Manager starts, stops and hot-reloads workflows from their YAML files.
// The daemon parses the files; the store keeps the last good config, the
// params and the setup results, so an edit or a restart resolves a
// workflow exactly as it was started.
type Manager struct {
	tracer       trace.Tracer
	member       string
	db           *store.DB
	team         *team.Service
	sched        Scheduler
	triggers     Triggers
	worktrees    Worktrees
	catalog      agents.Catalog
	defaultModel string
	now          func() time.Time
	log          hclog.Logger
	notify       Notifications
	requireBox   bool

	// locksMu guards the fields that follow it up to filesMu. Each
	// workflow instance (name and tag) has a lock of its own, so that a
	// slow start of one team never holds up another's commands: it
	// serialises the instance's start (after its setup steps), stop,
	// pause, resume, reload and accept.
	locksMu sync.Mutex
	locks   map[store.Scope]*scopeLock
	// starting holds the instances whose start runs its setup steps,
	// which run under no lock: a second start of one is refused at once,
	// and a stop meanwhile ends the setup and the start (stopStarting).
	starting map[store.Scope]*pendingStart

	// filesMu guards the fields that follow. It is held only to read or
	// change them, never across the store, a shell or git.
	filesMu sync.Mutex
	files   map[string]map[store.Scope]bool // watched file → the workflows started from it
	watcher *fsnotify.Watcher

	// docsMu makes the check that no other running instance writes to a
	// documents folder and the save that claims the folder one step,
	// across instances (checkDocsDir).
	docsMu sync.Mutex
}

// scopeLock is one workflow instance's lock; refs counts its holders and
// waiters, so that the lock of an instance nobody acts on is dropped.
type scopeLock struct {
	mu   sync.Mutex
	refs int // guarded by Manager.locksMu
}

// lock takes scope's own lock and returns what releases it.
func (ws *Manager) lock(scope store.Scope) (unlock func()) {
	ws.locksMu.Lock()
	l := ws.locks[scope]
	if l == nil {
		l = &scopeLock{}
		ws.locks[scope] = l
	}
	l.refs++
	ws.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		ws.locksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(ws.locks, scope)
		}
		ws.locksMu.Unlock()
	}
}

// pendingStart is a start whose setup steps run: cancel ends them, and
// stopped says a stop came meanwhile (guarded by Manager.locksMu).
type pendingStart struct {
	cancel  context.CancelFunc
	stopped bool
}

// reserve marks scope as starting, with what ends its setup steps; false
// if a start of it already is.
func (ws *Manager) reserve(scope store.Scope, cancel context.CancelFunc) bool {
	ws.locksMu.Lock()
	defer ws.locksMu.Unlock()
	if ws.starting[scope] != nil {
		return false
	}
	ws.starting[scope] = &pendingStart{cancel: cancel}
	return true
}

// stopStarting ends the setup steps of scope's start, if one runs, and
// marks it stopped so that it does not start the team after them. It
// reports whether a start was running.
func (ws *Manager) stopStarting(scope store.Scope) bool {
	ws.locksMu.Lock()
	defer ws.locksMu.Unlock()
	p := ws.starting[scope]
	if p == nil {
		return false
	}
	p.stopped = true
	p.cancel()
	return true
}

// stoppedWhileStarting reports whether a stop came while scope's setup
// steps ran.
func (ws *Manager) stoppedWhileStarting(scope store.Scope) bool {
	ws.locksMu.Lock()
	defer ws.locksMu.Unlock()
	p := ws.starting[scope]
	return p != nil && p.stopped
}

func (ws *Manager) unreserve(scope store.Scope) {
	ws.locksMu.Lock()
	defer ws.locksMu.Unlock()
	delete(ws.starting, scope)
}

// New returns a Manager; Restore and Watch bring it to life.
func New(cfg Config) *Manager {
	return &Manager{db: cfg.DB, team: cfg.Team, sched: cfg.Sched, triggers: cfg.Triggers, worktrees: cfg.Worktrees, catalog: cfg.Catalog, defaultModel: cfg.DefaultModel,
		now: cfg.Now, log: cfg.Log, member: cfg.Member, files: map[string]map[store.Scope]bool{}, notify: cfg.Notify,
		tracer: cfg.Tracing.Tracer(), requireBox: cfg.RequireSandbox, locks: map[store.Scope]*scopeLock{}, starting: map[store.Scope]*pendingStart{}}
}

// owns reports whether this daemon watches w's file: always on the
// embedded store; in a cluster only its owner (or anyone, for a workflow
// recorded before owners were).
func (ws *Manager) owns(w store.Workflow) bool {
	return ws.member == "" || w.Owner == "" || w.Owner == ws.member
}

// parse reads a workflow file for this daemon to run: the file's own
// problems and every backend the daemon cannot run come back together.
func (ws *Manager) parse(path string, content []byte) (*workflow.File, error) {
	return workflow.Parse(path, content, workflow.WithBackends(func(word string) error {
		_, err := agents.ResolveBackend(ws.catalog, word)
		return err
	}))
}

// problemsError turns parse/validation problems into one invalid-request
// error that lists each with its file:line:col.
func problemsError(err error) error {
	var ps workflow.Problems
	if errors.As(err, &ps) {
		return api.Errorf(api.CodeInvalid, "%s has %d problem(s):\n%s", ps[0].File, len(ps), ps.Error())
	}
	if api.ErrorCode(err) == api.CodeInternal && !errors.Is(err, context.Canceled) {
		return api.Errorf(api.CodeInvalid, "%w", err)
	}
	return err
}

// readError classifies a failure to read a workflow file: too large is the
// user's to fix, anything else means the file is not there to read.
func readError(path string, err error) error {
	if errors.Is(err, workflow.ErrTooLarge) {
		return api.Errorf(api.CodeTooLarge, "%w", err)
	}
	return api.Errorf(api.CodeNotFound, "workflow file %s: %w", path, err)
}

// Started is what Start did: the workflow's scope and the newest message
// seq before it started (where a client following its channel begins).
// A dry run starts nothing.
type Started struct {
	Scope    store.Scope
	StartSeq int64
	DryRun   bool
	// TakenOver: the workflow was running; this cluster member took its
	// file over from the member that had it.
	TakenOver bool
}

// Start parses, sets up and starts a workflow under a tag.
func (ws *Manager) Start(ctx context.Context, req api.StartWorkflow) (Started, error) {
	if req.Path == "" {
		return Started{}, api.Errorf(api.CodeInvalid, "path is required: the workflow file's absolute path")
	}
	path, err := filepath.Abs(req.Path)
	if err != nil {
		return Started{}, api.Errorf(api.CodeInvalid, "path %q: %w", req.Path, err)
	}
	content := []byte(req.Content)
	switch {
	case req.Content == "":
		if content, err = workflow.ReadFile(path); err != nil {
			return Started{}, readError(path, err)
		}
	case len(content) > workflow.MaxFileBytes:
		return Started{}, api.Errorf(api.CodeTooLarge, "%v", &workflow.SizeError{What: "workflow " + path, Size: int64(len(content)), Limit: workflow.MaxFileBytes})
	}
	f, err := ws.parse(path, content)
	if err != nil {
		return Started{}, problemsError(err)
	}
	tag := req.Tag
	if tag == "" {
		tag = api.DefaultTag
	}
	if err := api.ValidateScopeName("tag", tag); err != nil {
		return Started{}, err
	}
	if f.Name == api.GlobalWorkflow {
		return Started{}, api.Errorf(api.CodeInvalid, "a workflow cannot be named %q: that is the standalone agents' scope", f.Name)
	}
	scope := store.Scope{Workflow: f.Name, Tag: tag}
	if req.DryRun {
		if _, err := f.ParseParams(req.Args); err != nil {
			return Started{}, api.Errorf(api.CodeInvalid, "%w", err)
		}
		seq, err := ws.db.LatestSeq(ctx, scope)
		return Started{Scope: scope, StartSeq: seq, DryRun: true}, err
	}

	defer ws.release(ctx, scope) // after the lock: agents a restart dropped from the file
	takenOver := false
	defer func() { // after the lock: reload takes it
		if takenOver {
			ws.reload(ctx, path)
		}
	}()
	// The setup steps (user shell, up to a minute each) run under no
	// lock: stop, pause, resume and reload of this and every other
	// instance go on meanwhile. A second start of this instance is
	// refused at once rather than running its setup again.
	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	if !ws.reserve(scope, cancelSetup) {
		return Started{}, api.Errorf(api.CodeConflict, "workflow @%s:%s is already being started (its setup steps are running): wait for that start to finish, or start another --tag",
			f.Name, tag)
	}
	defer ws.unreserve(scope)
	stopped := func() error {
		return api.Errorf(api.CodeConflict, "workflow @%s:%s was stopped while its setup steps ran: it did not start; to run it, `agent-worker start %s`", f.Name, tag, path)
	}
	unlock := ws.lock(scope)
	res, done, err := ws.startLive(ctx, scope, path, &takenOver)
	unlock()
	if done || err != nil {
		return res, err
	}
	params, err := f.ParseParams(req.Args)
	if err != nil {
		return Started{}, api.Errorf(api.CodeInvalid, "%w", err)
	}
	vars := workflow.Vars{Workflow: f.Name, Tag: tag, Params: params}
	if vars.Setup, err = workflow.RunSetup(setupCtx, f, vars); err != nil {
		if ws.stoppedWhileStarting(scope) {
			return Started{}, stopped()
		}
		return Started{}, api.Errorf(api.CodeInvalid, "%w", err)
	}
	defer ws.lock(scope)()
	if ws.stoppedWhileStarting(scope) {
		return Started{}, stopped()
	}
	// Looked at again: another cluster member may have started the
	// instance while the setup ran.
	if res, done, err := ws.startLive(ctx, scope, path, &takenOver); done || err != nil {
		return res, err
	}
	inst, err := workflow.Resolve(f, vars)
	if err != nil {
		return Started{}, problemsError(err)
	}
	before, err := ws.db.LatestSeq(ctx, scope)
	if err != nil {
		return Started{}, err
	}
	if err := ws.apply(ctx, inst, content, vars, ws.now(), api.WorkflowRunning); err != nil {
		return Started{}, err
	}
	if inst.Kickoff != "" {
		// The kickoff's span is the root of the trace the runs it wakes
		// (and theirs) join through the message.
		kctx, span := telemetry.Workflow(ctx, ws.tracer, scope.Workflow, scope.Tag, "kickoff")
		_, err := ws.team.Send(kctx, team.SendRequest{Scope: scope, From: team.SenderSystem, Content: inst.Kickoff})
		span.End()
		if err != nil {
			return Started{}, fmt.Errorf("post kickoff: %w", err)
		}
	}
	ws.watch(path, scope)
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: scope.Workflow, Tag: scope.Tag}, State: "started"})
	ws.log.Info("workflow started", "workflow", scope.String(), "file", path, "agents", len(inst.Agents))
	return Started{Scope: scope, StartSeq: before}, nil
}

// startLive is what a start does when its instance already runs, under
// the instance's lock: refused, or in a cluster, the file taken over from
// the member that had it (takenOver set). done: the start ends here.
func (ws *Manager) startLive(ctx context.Context, scope store.Scope, path string, takenOver *bool) (_ Started, done bool, _ error) {
	old, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil || !old.State.Live() {
		return Started{}, false, nil
	}
	if ws.member != "" && old.SourcePath != "" && old.Owner != ws.member {
		// In a cluster, starting a running workflow's file on another
		// member takes the file over: this member watches it from now
		// on, and applies it if it differs from what runs.
		if err := ws.db.SetWorkflowOwner(ctx, scope, ws.member, path); err != nil {
			return Started{}, true, err
		}
		ws.watch(path, scope)
		*takenOver = true
		seq, err := ws.db.LatestSeq(ctx, scope)
		ws.log.Info("workflow file taken over", "workflow", scope.String(), "file", path, "from", old.Owner)
		return Started{Scope: scope, StartSeq: seq, TakenOver: true}, true, err
	}
	return Started{}, true, api.Errorf(api.CodeConflict, "workflow @%s:%s is already started and %s (from %s): stop it with `agent-worker stop @%s:%s` or start another --tag",
		scope.Workflow, scope.Tag, old.State, old.SourcePath, scope.Workflow, scope.Tag)
}

// apply records inst as the workflow's config and reconciles its agents:
// new ones are created and scheduled, changed ones take the new config
// from their next run, removed ones stop after their current run, and
// untouched ones are left alone.
// started is the start time for a start, zero for a reload; state is the
// workflow's state after it (a reload keeps a paused workflow paused).
func (ws *Manager) apply(ctx context.Context, inst *workflow.Instance, content []byte, vars workflow.Vars, started time.Time, state api.WorkflowState) error {
	wanted := map[string]store.Agent{}
	for _, a := range inst.Agents {
		if ws.requireBox && a.Sandbox.Off() {
			return api.Errorf(api.CodeInvalid, "%s:%d: agent %s: sandbox: {mode: off} is refused: the daemon requires every run confined (--sandbox required): remove mode: off, or start the daemon with --sandbox auto", inst.Path, a.Line, a.Name)
		}
		if _, err := agents.ResolveBackend(ws.catalog, a.Backend); err != nil {
			return api.Errorf(api.CodeInvalid, "%s:%d: agent %s: %w", inst.Path, a.Line, a.Name, err)
		}
		model := a.Model
		if a.Backend == "sdk" && model == "" {
			model = ws.defaultModel
		}
		wanted[a.Name] = store.Agent{Name: a.Name, Workflow: inst.Name, Tag: inst.Tag, Backend: a.Backend, Model: model,
			System: a.SystemPrompt, Schedule: a.Schedule, WakeupPrompt: a.WakeupPrompt, Config: a.BackendConfig(),
			CanSpawn: a.CanSpawn, MaxSpawned: a.MaxSpawned, Roles: a.Roles}
	}
	if err := ws.checkDocs(ctx, inst); err != nil {
		return err
	}
	if err := ws.triggers.Check(inst.Path, inst.Triggers); err != nil {
		return err
	}
	if err := ws.checkNotify(inst); err != nil {
		return err
	}
	wsp, err := ws.checkWorkspace(ctx, inst, started.IsZero())
	if err != nil {
		return err
	}
	// The folder check again, made one step with the save: instances
	// load side by side, each under its own lock.
	ws.docsMu.Lock()
	err = ws.checkDocsDir(ctx, inst)
	if err == nil {
		_, err = ws.db.SaveWorkflow(ctx, store.Workflow{Name: inst.Name, Tag: inst.Tag, SourcePath: inst.Path,
			ConfigYAML: string(content), State: state, Workdir: inst.Dir, DocsDir: inst.Context.DocsDir,
			DocsProvider: inst.Context.Documents, DocsOwner: inst.Context.DocumentOwner, LongMessageChars: inst.Context.LongMessageChars, LoopGuard: inst.LoopGuard,
			Params: vars.Params, Vars: vars.Setup, StartedAt: started, WorkspaceRepo: wsp.Repo, WorkspaceBase: wsp.Base, Repos: wsp.Repos})
	}
	ws.docsMu.Unlock()
	if err != nil {
		return err
	}
	scope := store.Scope{Workflow: inst.Name, Tag: inst.Tag}
	hooks := make([]store.Trigger, len(inst.Triggers))
	for i, t := range inst.Triggers {
		hooks[i] = store.Trigger{Workflow: inst.Name, Tag: inst.Tag, Name: t.Name, SecretEnv: t.SecretEnv, Message: t.Message, Line: t.Line,
			Provider: string(t.Provider), Events: t.Events}
		if t.Report != nil {
			b, err := json.Marshal(t.Report)
			if err != nil {
				return err
			}
			hooks[i].Report = string(b)
		}
	}
	if err := ws.db.ReplaceTriggers(ctx, scope, hooks); err != nil {
		return err
	}
	if err := ws.subscribe(ctx, scope, inst); err != nil {
		return err
	}
	existing, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: inst.Name, Tag: inst.Tag})
	if err != nil {
		return err
	}
	have := map[string]store.Agent{}
	for _, a := range existing {
		have[a.Name] = a
		// A spawned agent is not in the file; it lives until agent_stop or
		// the end of the workflow.
		if _, keep := wanted[a.Name]; !keep && a.SpawnedBy == "" && a.State != api.AgentStopped {
			if err := ws.db.SetAgentState(ctx, a.Key(), api.AgentStopped, ""); err != nil {
				return err
			}
			ws.log.Info("agent removed from the workflow; it stops after its current run", "agent", a.Key().String())
		}
	}
	for _, a := range inst.Agents {
		want := wanted[a.Name]
		old, ok := have[a.Name]
		switch {
		case !ok:
			if _, err := ws.db.CreateAgent(ctx, want); err != nil {
				return err
			}
		case sameAgent(old, want) && old.State != api.AgentStopped:
			continue // untouched: no restart, nothing lost
		default:
			want.State = api.AgentIdle
			switch old.State {
			case api.AgentRunning:
				want.State = api.AgentRunning // its run in flight finishes on the old config
			case api.AgentPaused, api.AgentOverBudget:
				want.State = old.State // an edit is not a resume
			}
			if err := ws.db.UpdateAgent(ctx, want); err != nil {
				return err
			}
			ws.log.Info("agent config changed; used from its next run", "agent", want.Key().String())
		}
		ws.sched.Add(want.Key())
		ws.sched.Reschedule(want.Key())
	}
	return ws.applyBudgets(ctx, inst)
}

// checkWorkspace resolves inst's workspace (its git repository and base
// branch, its named repositories), refusing it at its line when it cannot
// work. A reload keeps the bases the workflow has when the file names
// none.
func (ws *Manager) checkWorkspace(ctx context.Context, inst *workflow.Instance, reload bool) (store.Workspace, error) {
	if inst.Workspace == nil {
		return store.Workspace{}, nil
	}
	if ws.worktrees == nil {
		return store.Workspace{}, api.Errorf(api.CodeInvalid, "%s:%d: workspace: this daemon was built without git worktrees: remove workspace:", inst.Path, inst.Workspace.Line)
	}
	var cur store.Workflow
	if reload {
		if wf, err := ws.db.GetWorkflow(ctx, inst.Name, inst.Tag); err == nil {
			cur = wf
		}
	}
	return ws.worktrees.Check(ctx, inst, cur)
}

// release has the worktrees of scope's stopped agents tidied; callers
// defer it before taking the instance's lock, so git never runs under it.
func (ws *Manager) release(ctx context.Context, scope store.Scope) {
	if ws.worktrees != nil {
		ws.worktrees.Release(context.WithoutCancel(ctx), scope)
	}
}

// applyBudgets makes the stored budgets those of the file: a start or an
// edit replaces what `agent-worker budget` set meanwhile.
func (ws *Manager) applyBudgets(ctx context.Context, inst *workflow.Instance) error {
	scope := store.Scope{Workflow: inst.Name, Tag: inst.Tag}
	set := func(agent string, b *workflow.Budget) error {
		if b == nil {
			return ws.db.ClearBudget(ctx, scope, agent)
		}
		return ws.db.SetBudget(ctx, store.Budget{Workflow: inst.Name, Tag: inst.Tag, Agent: agent, USD: b.USD, Tokens: b.Tokens, Runs: b.Runs, Hard: b.Hard})
	}
	if err := set("", inst.Budget); err != nil {
		return err
	}
	for _, a := range inst.Agents {
		if err := set(a.Name, a.Budget); err != nil {
			return err
		}
	}
	return nil
}

// checkDocs refuses, before anything starts, a documents provider that
// does not exist, and a documents folder another running instance already
// writes to: instances share nothing, and two teams editing one notes.md
// would overwrite each other's work.
func (ws *Manager) checkDocs(ctx context.Context, inst *workflow.Instance) error {
	name := inst.Context.Documents
	if name != "" && name != "file" && name != "sqlite" && !slices.Contains(ws.catalog.Names(plugin.KindDocs), name) {
		return api.Errorf(api.CodeInvalid, "%s: documents provider %q is neither built in (file, sqlite) nor installed: use file or sqlite, or install agent-worker-docs-%s into a plugins.d folder",
			inst.Path, name, name)
	}
	return ws.checkDocsDir(ctx, inst)
}

// checkDocsDir refuses a documents folder another running instance
// writes to.
func (ws *Manager) checkDocsDir(ctx context.Context, inst *workflow.Instance) error {
	dir := inst.Context.DocsDir
	if dir == "" {
		return nil
	}
	all, err := ws.db.ListWorkflows(ctx)
	if err != nil {
		return err
	}
	for _, w := range all {
		if w.State == api.WorkflowRunning && w.DocsDir == dir && (w.Name != inst.Name || w.Tag != inst.Tag) {
			return api.Errorf(api.CodeConflict, "%s: documents folder %s is already used by @%s:%s, and two instances share no documents: put ${{ workflow.tag }} in the folder (e.g. dir: ./docs/${{ workflow.tag }}) or stop @%s:%s first",
				inst.Path, dir, w.Name, w.Tag, w.Name, w.Tag)
		}
	}
	return nil
}

func sameAgent(a, b store.Agent) bool {
	return a.Backend == b.Backend && a.Model == b.Model && a.System == b.System && a.Schedule == b.Schedule &&
		a.WakeupPrompt == b.WakeupPrompt && a.Config.Equal(b.Config) && a.CanSpawn == b.CanSpawn && a.MaxSpawned == b.MaxSpawned &&
		slices.Equal(a.Roles, b.Roles)
}

// Stop stops a workflow: its agents stop after their current run, or at
// once with cancel (Ctrl-C on `run`). It stays in the store, stopped.
func (ws *Manager) Stop(ctx context.Context, scope store.Scope, cancel bool) error {
	if scope.Workflow == api.GlobalWorkflow {
		return api.Errorf(api.CodeInvalid, "the global workflow cannot be stopped: stop its agents one by one")
	}
	// A start of scope still in its setup steps ends there: a first
	// start has nothing in the store yet, and is stopped once it ends.
	starting := ws.stopStarting(scope)
	defer ws.release(ctx, scope) // after the lock: runs in flight are tidied when they end
	defer ws.lock(scope)()
	if _, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag); err != nil {
		if starting && api.ErrorCode(err) == api.CodeNotFound {
			return nil
		}
		return err
	}
	if err := ws.db.SetWorkflowState(ctx, scope.Workflow, scope.Tag, api.WorkflowStopped, ""); err != nil {
		return err
	}
	agents, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
	if err != nil {
		return err
	}
	for _, a := range agents {
		if a.State != api.AgentStopped {
			if err := ws.db.SetAgentState(ctx, a.Key(), api.AgentStopped, ""); err != nil {
				return err
			}
		}
		if cancel {
			ws.sched.Remove(a.Key())
		}
	}
	ws.filesMu.Lock()
	for path, scopes := range ws.files {
		delete(scopes, scope)
		if len(scopes) == 0 {
			delete(ws.files, path)
		}
	}
	ws.filesMu.Unlock()
	ws.log.Info("workflow stopped", "workflow", scope.String(), "cancel_runs", cancel)
	return nil
}

// Pause holds every agent of a workflow:tag: no agent of it starts a run
// until it is resumed (the scheduler checks the workflow's state before
// each run), messages keep arriving and wait unread, and runs in flight
// finish normally. The agents keep their own states, so resuming the
// workflow brings each back as it was. Pausing a paused workflow is a
// no-op; a stopped one is refused.
func (ws *Manager) Pause(ctx context.Context, scope store.Scope) error {
	defer ws.lock(scope)()
	wf, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return noWorkflow(scope, err)
	}
	moved, err := ws.db.MoveWorkflowState(ctx, scope.Workflow, scope.Tag,
		[]api.WorkflowState{api.WorkflowRunning, api.WorkflowPaused}, api.WorkflowPaused, wf.Error)
	if err != nil {
		return noWorkflow(scope, err)
	}
	if !moved {
		return api.Errorf(api.CodeConflict, "%s is %s: nothing to pause", displayScope(scope), wf.State)
	}
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: scope.Workflow, Tag: scope.Tag}, State: string(api.WorkflowPaused)})
	ws.log.Info("workflow paused", "workflow", scope.String())
	return nil
}

// Resume lets a paused or over-budget workflow:tag run again, clears every
// agent of it that is paused, failed or over budget, and wakes them all so
// that waiting messages run. It is refused when there is nothing to
// resume, and for a stopped workflow (start it again instead).
func (ws *Manager) Resume(ctx context.Context, scope store.Scope) error {
	defer ws.lock(scope)()
	wf, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return noWorkflow(scope, err)
	}
	if !wf.State.Live() {
		return api.Errorf(api.CodeConflict, "%s is %s: start it again with `agent-worker start <file>`", displayScope(scope), wf.State)
	}
	moved, err := ws.db.MoveWorkflowState(ctx, scope.Workflow, scope.Tag,
		[]api.WorkflowState{api.WorkflowPaused, api.WorkflowOverBudget}, api.WorkflowRunning, "")
	if err != nil {
		return noWorkflow(scope, err)
	}
	members, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
	if err != nil {
		return err
	}
	cleared := 0
	for _, a := range members {
		ok, err := ws.db.MoveAgentState(ctx, a.Key(), []api.AgentState{api.AgentPaused, api.AgentFailed, api.AgentOverBudget}, api.AgentIdle, "")
		if err != nil && api.ErrorCode(err) != api.CodeNotFound {
			return err
		}
		if ok {
			cleared++
			ws.team.Bus.Publish(team.Event{Kind: team.EventAgentState, Agent: a.Key(), State: string(api.AgentIdle)})
		}
	}
	if !moved && cleared == 0 {
		return api.Errorf(api.CodeConflict, "%s is running and none of its agents is paused, failed or over budget: nothing to resume", displayScope(scope))
	}
	for _, a := range members {
		ws.sched.Add(a.Key())
		ws.sched.Reschedule(a.Key())
	}
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: scope.Workflow, Tag: scope.Tag}, State: "resumed"})
	ws.log.Info("workflow resumed", "workflow", scope.String(), "agents_cleared", cleared)
	return nil
}

// noWorkflow words a missing workflow for pause and resume.
func noWorkflow(scope store.Scope, err error) error {
	if api.ErrorCode(err) == api.CodeNotFound {
		return api.Errorf(api.CodeNotFound, "no workflow %s: `agent-worker status` lists the workflows there are", displayScope(scope))
	}
	return err
}

func displayScope(scope store.Scope) string {
	return api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
}

// Restore watches the files of workflows a previous daemon left running;
// their agents are already in the store and the scheduler picks them up.
func (ws *Manager) Restore(ctx context.Context) error {
	all, err := ws.db.ListWorkflows(ctx)
	if err != nil {
		return err
	}
	for _, w := range all {
		if w.State.Live() && w.SourcePath != "" && ws.owns(w) {
			ws.watch(w.SourcePath, store.Scope{Workflow: w.Name, Tag: w.Tag})
		}
		if w.State != api.WorkflowStopped {
			ws.warnSecrets(ctx, w)
		}
	}
	return nil
}

// warnSecrets logs the triggers of w whose secret this daemon's
// environment lacks: they were accepted when w loaded, under another
// environment, and now answer 503 until the daemon restarts with it.
func (ws *Manager) warnSecrets(ctx context.Context, w store.Workflow) {
	hooks, err := ws.db.ListTriggers(ctx, store.Scope{Workflow: w.Name, Tag: w.Tag})
	if err != nil || len(hooks) == 0 {
		return
	}
	ts := make([]workflow.Trigger, len(hooks))
	for i, t := range hooks {
		ts[i] = workflow.Trigger{Name: t.Name, SecretEnv: t.SecretEnv, Message: t.Message, Line: t.Line}
		if t.Report != "" {
			var r workflow.Report
			if json.Unmarshal([]byte(t.Report), &r) == nil {
				ts[i].Report = &r
			}
		}
	}
	if err := ws.triggers.Check(w.SourcePath, ts); err != nil {
		ws.log.Warn("webhooks refuse deliveries until their secret is set", "workflow", w.Name+":"+w.Tag, "error", err)
	}
}

// watch has the file at path watched for scope.
func (ws *Manager) watch(path string, scope store.Scope) {
	ws.filesMu.Lock()
	defer ws.filesMu.Unlock()
	if ws.files[path] == nil {
		ws.files[path] = map[store.Scope]bool{}
	}
	ws.files[path][scope] = true
	if ws.watcher != nil {
		if err := ws.watcher.Add(filepath.Dir(path)); err != nil {
			ws.log.Warn("watch workflow dir", "dir", filepath.Dir(path), "error", err)
		}
	}
}

// Watch reloads workflows when their files change until ctx ends. It
// watches directories, not files (editors replace files on save), and
// looks at the file once its events have settled.
func (ws *Manager) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch workflows: %w", err)
	}
	defer w.Close()
	ws.filesMu.Lock()
	ws.watcher = w
	paths := make([]string, 0, len(ws.files))
	for path := range ws.files {
		if err := w.Add(filepath.Dir(path)); err != nil {
			ws.log.Warn("watch workflow dir", "dir", filepath.Dir(path), "error", err)
		}
		paths = append(paths, path)
	}
	ws.filesMu.Unlock()
	// A file edited while no daemon watched it is compared with what runs
	// now, as an edit would be: a widening one waits for the owner. An
	// unchanged one is left alone (a reload would clear the error that
	// says why a workflow is paused).
	for _, path := range paths {
		if ws.editedWhileAway(ctx, path) {
			ws.reload(ctx, path)
		}
	}
	fswatch.Run(ctx, w, reloadDebounce, fswatch.Handler{
		Keep: func(ev fsnotify.Event) bool {
			ws.filesMu.Lock()
			_, watched := ws.files[ev.Name]
			ws.filesMu.Unlock()
			return watched && ev.Op != fsnotify.Chmod
		},
		Settled: func(path string) { ws.reload(ctx, path) },
		Error:   func(err error) { ws.log.Warn("workflow watcher", "error", err) },
	})
	return nil
}

// editedWhileAway reports whether the file at path differs from both
// the config and the edit waiting of a workflow started from it.
func (ws *Manager) editedWhileAway(ctx context.Context, path string) bool {
	content, err := workflow.ReadFile(path)
	for _, scope := range ws.watchers(path) {
		cur, gerr := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
		if gerr != nil || !cur.State.Live() {
			continue
		}
		if err != nil || string(content) != cur.ConfigYAML && string(content) != cur.PendingYAML {
			return true
		}
	}
	return false
}

// reload applies an edited file to every workflow started from it, each
// under its own lock. A bad edit changes nothing that runs: the error is
// recorded where status and info show it, and published as an event.
func (ws *Manager) reload(ctx context.Context, path string) {
	content, readErr := workflow.ReadFile(path)
	for _, scope := range ws.watchers(path) {
		if ws.reloadOne(ctx, path, scope, content, readErr) {
			ws.release(ctx, scope) // after the lock: agents the edit removed
		}
	}
}

// watchers are the workflows started from the file at path.
func (ws *Manager) watchers(path string) []store.Scope {
	ws.filesMu.Lock()
	defer ws.filesMu.Unlock()
	return slices.Collect(maps.Keys(ws.files[path]))
}

// unwatch stops watching the file at path for scope.
func (ws *Manager) unwatch(path string, scope store.Scope) {
	ws.filesMu.Lock()
	defer ws.filesMu.Unlock()
	delete(ws.files[path], scope)
}

// reloadOne applies the file's content (or readErr) to scope, under
// scope's lock, and reports whether it applied an edit.
func (ws *Manager) reloadOne(ctx context.Context, path string, scope store.Scope, content []byte, readErr error) bool {
	defer ws.lock(scope)()
	cur, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil || !cur.State.Live() {
		return false
	}
	if !ws.owns(cur) {
		// Another member started it from its copy of the file since:
		// that member watches it now.
		ws.unwatch(path, scope)
		ws.log.Info("workflow file taken over by another member", "workflow", scope.String(), "owner", cur.Owner)
		return false
	}
	switch {
	case errors.Is(readErr, workflow.ErrTooLarge):
		ws.reject(ctx, cur, fmt.Sprintf("edit rejected, the last good config keeps running: %v", readErr))
		return false
	case readErr != nil:
		ws.reject(ctx, cur, fmt.Sprintf("workflow file %s is gone (%v); the last good config keeps running", path, readErr))
		return false
	}
	if string(content) == cur.ConfigYAML {
		if cur.Error != "" || cur.PendingYAML != "" {
			ws.accept(ctx, cur) // back to what runs: nothing waits any more
		}
		return false
	}
	if string(content) == cur.PendingYAML {
		return false // already waiting for the owner
	}
	f, err := ws.parse(path, content)
	if err == nil && f.Name != cur.Name {
		err = fmt.Errorf("%s: the workflow's name changed from %s to %s: stop it and start it again to rename it", path, cur.Name, f.Name)
	}
	if err == nil {
		// A run may write the file (it works in its folder): what
		// lets runs do more waits for the owner, whole.
		if reasons := ws.widens(cur, f); len(reasons) > 0 {
			ws.hold(ctx, cur, content, reasons)
			return false
		}
	}
	var inst *workflow.Instance
	if err == nil {
		inst, err = workflow.Resolve(f, workflow.Vars{Workflow: cur.Name, Tag: cur.Tag, Params: cur.Params, Setup: cur.Vars})
	}
	if err == nil {
		err = ws.apply(ctx, inst, content, workflow.Vars{Params: cur.Params, Setup: cur.Vars}, time.Time{}, cur.State)
	}
	if err != nil {
		ws.reject(ctx, cur, "edit rejected, the last good config keeps running: "+problemsError(err).Error())
		return false
	}
	ws.log.Info("workflow reloaded", "workflow", scope.String())
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: cur.Name, Tag: cur.Tag}, State: "reloaded"})
	return true
}

func (ws *Manager) reject(ctx context.Context, cur store.Workflow, msg string) {
	ws.log.Warn("workflow reload", "workflow", cur.Name+":"+cur.Tag, "error", msg)
	if err := ws.db.SetWorkflowError(ctx, cur.Name, cur.Tag, msg); err != nil {
		ws.log.Error("record reload error", "error", err)
	}
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: cur.Name, Tag: cur.Tag}, State: "rejected", Error: msg})
}

func (ws *Manager) accept(ctx context.Context, cur store.Workflow) {
	if err := ws.db.SetWorkflowError(ctx, cur.Name, cur.Tag, ""); err != nil {
		ws.log.Error("clear reload error", "error", err)
	}
	if cur.PendingYAML != "" {
		if err := ws.db.SetWorkflowPending(ctx, cur.Name, cur.Tag, "", nil); err != nil {
			ws.log.Error("clear the edit waiting for its owner", "error", err)
		}
	}
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: cur.Name, Tag: cur.Tag}, State: "reloaded"})
}

// widens is how f lets the runs of cur do more than the config that runs
// (workflow.Widens); a running config that no longer parses (a file its
// prompt names is gone) cannot vouch for anything, so every edit waits.
func (ws *Manager) widens(cur store.Workflow, f *workflow.File) []string {
	old, err := workflow.Parse(cur.SourcePath, []byte(cur.ConfigYAML))
	if err != nil {
		return []string{"the running config cannot be compared with the edit (" + problemsError(err).Error() + ")"}
	}
	return workflow.Widens(workflow.PolicyOf(old), workflow.PolicyOf(f))
}

// hold keeps an edit that widens what runs may do for the owner to
// accept (Accept): the last accepted config keeps running, and status,
// workflows and the console show the edit waiting with its reasons.
func (ws *Manager) hold(ctx context.Context, cur store.Workflow, content []byte, reasons []string) {
	ws.log.Warn("workflow edit widens what runs may do; it waits for `agent-worker workflows accept`", "workflow", cur.Name+":"+cur.Tag,
		"file", cur.SourcePath, "widens", strings.Join(reasons, "; "))
	if err := ws.db.SetWorkflowPending(ctx, cur.Name, cur.Tag, string(content), reasons); err != nil {
		ws.log.Error("record the edit waiting for its owner", "error", err)
		return
	}
	if cur.Error != "" {
		if err := ws.db.SetWorkflowError(ctx, cur.Name, cur.Tag, ""); err != nil { // an earlier bad edit is superseded
			ws.log.Error("clear reload error", "error", err)
		}
	}
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: cur.Name, Tag: cur.Tag}, State: "pending",
		Error: fmt.Sprintf("an edit of %s widens what runs may do and waits for `agent-worker workflows accept %s`: %s", cur.SourcePath,
			displayScope(store.Scope{Workflow: cur.Name, Tag: cur.Tag}), strings.Join(reasons, "; "))})
}

// Accept applies the edit of scope's file that waits for its owner
// because it widens what runs may do: exactly the version the owner was
// shown, not whatever the file holds now. It is refused when nothing
// waits, and like any load when the edit cannot run here (--sandbox
// required and a sandbox off, a missing backend).
func (ws *Manager) Accept(ctx context.Context, scope store.Scope) error {
	defer ws.release(ctx, scope) // after the lock: agents the edit removed
	defer ws.lock(scope)()
	cur, err := ws.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return noWorkflow(scope, err)
	}
	if cur.PendingYAML == "" {
		return api.Errorf(api.CodeConflict, "%s has no edit waiting to be accepted: an edit of its file waits only when it widens what runs may do", displayScope(scope))
	}
	if !cur.State.Live() {
		return api.Errorf(api.CodeConflict, "%s is %s: start it again with `agent-worker start %s`, which loads the file as it is", displayScope(scope), cur.State, cur.SourcePath)
	}
	content := []byte(cur.PendingYAML)
	f, err := ws.parse(cur.SourcePath, content)
	if err != nil {
		return problemsError(err)
	}
	inst, err := workflow.Resolve(f, workflow.Vars{Workflow: cur.Name, Tag: cur.Tag, Params: cur.Params, Setup: cur.Vars})
	if err != nil {
		return problemsError(err)
	}
	if err := ws.apply(ctx, inst, content, workflow.Vars{Params: cur.Params, Setup: cur.Vars}, time.Time{}, cur.State); err != nil {
		return err
	}
	ws.log.Info("workflow edit accepted by its owner", "workflow", scope.String(), "widens", strings.Join(cur.PendingReasons, "; "))
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: cur.Name, Tag: cur.Tag}, State: "reloaded"})
	return nil
}

// Progress reports whether a workflow's team is done and what it cost
// since the workflow (re)started.
func (ws *Manager) Progress(ctx context.Context, wf store.Workflow) (*api.Progress, error) {
	scope := store.Scope{Workflow: wf.Name, Tag: wf.Tag}
	agents, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: wf.Name, Tag: wf.Tag})
	if err != nil {
		return nil, err
	}
	p := &api.Progress{}
	for _, a := range agents {
		if a.State == api.AgentFailed {
			p.Failed = append(p.Failed, a.Name)
		}
	}
	if p.Idle, err = ws.idle(ctx, scope, agents); err != nil {
		return nil, err
	}
	st, err := ws.db.Stats(ctx, scope, wf.StartedAt)
	if err != nil {
		return nil, err
	}
	p.Runs, p.FailedRuns, p.InputTokens, p.OutputTokens, p.CostUSD = st.Runs, st.Failed, st.InputTokens, st.OutputTokens, st.CostUSD
	p.UnpricedRuns = st.Unpriced
	p.DurationMS = ws.now().Sub(wf.StartedAt).Milliseconds()
	return p, nil
}

// Idle reports whether a workflow's team has finished (Progress.Idle) and
// nothing more: while the team works it costs one read, which is what an
// event stream that waits for the end (`run`) pays on every event.
func (ws *Manager) Idle(ctx context.Context, scope store.Scope) (bool, error) {
	agents, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
	if err != nil {
		return false, err
	}
	return ws.idle(ctx, scope, agents)
}

// idle is whether the team of agents has finished: none running, none
// with unread messages (a failed or stopped agent's and an outside
// agent's do not count), no proposal open and nothing in the merge queue,
// whose outcome is still to come. It stops at the first sign of work.
func (ws *Manager) idle(ctx context.Context, scope store.Scope, agents []store.Agent) (bool, error) {
	for _, a := range agents {
		if a.State == api.AgentRunning {
			return false, nil
		}
	}
	for _, a := range agents {
		if a.State == api.AgentFailed || a.State == api.AgentStopped || a.Backend == "external" {
			continue
		}
		if d, err := ws.db.InboxDepth(ctx, a.Key()); err != nil || d > 0 {
			return false, err
		}
	}
	if n, err := ws.db.ActiveProposalCount(ctx, scope); err != nil || n > 0 {
		return false, err
	}
	n, err := ws.db.PendingQueueCount(ctx, scope)
	return err == nil && n == 0, err
}
