package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/codes"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/internal/backoff"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Scheduler defaults (SPEC.md "Scheduling", invariant 3).
const (
	DefaultPollInterval = 5 * time.Second
	DefaultAttempts     = 3
	DefaultRetryBase    = time.Second
	// DefaultWakeupPrompt is what a scheduled wake-up says when the agent
	// has no prompt of its own.
	DefaultWakeupPrompt = "Scheduled wakeup. Check for any pending work or updates."
)

// errUserCancel ends a run the user cancelled (Ctrl-C on ask, `cancel`):
// it is not retried, and the agent goes back to idle.
var errUserCancel = errors.New("cancelled by the user")

// errNotSchedulable ends an attempt that found the agent paused, stopped
// or over budget when it was about to start: nothing ran.
var errNotSchedulable = errors.New("the agent may not start a run")

// Config tunes when agents run; zero values take the defaults.
type Config struct {
	// PollInterval is the inbox safety net behind wakes.
	PollInterval time.Duration
	// MaxConcurrent caps runs across the daemon (default 2 × cores).
	MaxConcurrent int
	// Attempts per run before the agent is marked failed.
	Attempts int
	// RetryBase is the first retry's backoff; it doubles, with jitter.
	RetryBase time.Duration
	// Clock drives schedules and the poll; tests inject a fake one.
	Clock Clock
	// BeforeSettle, when set, is called after a successful run's plugin
	// has exited and before the run is settled; an error leaves the run
	// unsettled (failed, its inbox unread, nothing posted). It is a test
	// hook: it lets a test kill the daemon in exactly that window.
	BeforeSettle func(ctx context.Context, runID string) error
	// Observer hears how long messages waited for their run (the daemon's
	// metrics); nil hears nothing.
	Observer Observer
	// Lifetime ends when the daemon stops: until then, the state change
	// that ends a run waits out a store outage instead of being dropped
	// (nil: the background context, which never ends).
	Lifetime context.Context
	// Notify hears of an agent failed for good and of a budget spent
	// (host/notify); nil tells no one.
	Notify Notifier
	// Tracing gives a scheduled wake-up its invoke_workflow span, the root
	// of the trace of the run it wakes (nil: no spans).
	Tracing *telemetry.Telemetry
}

// Observer hears, as each run starts, how long the oldest message it is
// shown has waited (host/metrics.Metrics). It must return at once.
type Observer interface {
	RunWaited(backendName string, d time.Duration)
}

type nopObserver struct{}

func (nopObserver) RunWaited(string, time.Duration) {}

// Runner runs one attempt of an agent run in a fresh plugin process: the
// one thing the scheduler needs from the run supervisor (host/runner).
type Runner interface {
	Run(ctx context.Context, spec runspec.RunSpec) (runspec.Outcome, error)
}

// Scheduler decides when each agent runs: on a wake (a new inbox message,
// coalesced), on the inbox poll, and on its interval or cron schedule. Each
// agent has one loop, so it runs at most once at a time; a FIFO semaphore
// caps runs daemon-wide and serves agents in the order they asked. All
// state it acts on is in the store, so a restarted daemon carries on.
type Scheduler struct {
	db    *store.DB
	sup   Runner
	team  *team.Service
	log   hclog.Logger
	cfg   Config
	slots chan struct{}
	sub   *team.Subscription // wakes, subscribed in Start
	// dispatch, in a cluster, takes the turns the loops decide on to the
	// cluster's job queue, from which any member runs them (Turn); nil runs
	// them here.
	dispatch Dispatcher

	// mu guards the fields that follow.
	mu    sync.Mutex
	ctx   context.Context // set by Run; loops live under it
	loops map[store.AgentKey]*agentLoop
	// stopped is set once Run waits for the loops: no loop starts after
	// (a turn from the cluster's queue calls Add while the daemon stops;
	// wg.Go beside wg.Wait is a race).
	stopped bool
	wg      sync.WaitGroup

	// holding counts, per agent, the runs this daemon is starting, running
	// or ending: from before the agent moves to running until after it
	// moves back (Holds).
	holdMu  sync.Mutex
	holding map[store.AgentKey]int

	// afterEvent, when set (in-package tests, before Run), hears each bus
	// event once Run has handed it on (quiet.go).
	afterEvent func(team.Event)
}

// New returns a scheduler that hands each attempt to sup; Start and Run
// bring it to life.
func New(db *store.DB, sup Runner, svc *team.Service, cfg Config, log hclog.Logger) *Scheduler {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent()
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Lifetime == nil {
		cfg.Lifetime = context.Background()
	}
	return &Scheduler{db: db, sup: sup, team: svc, log: log, cfg: cfg,
		slots: make(chan struct{}, cfg.MaxConcurrent), loops: map[store.AgentKey]*agentLoop{},
		holding: map[store.AgentKey]int{}}
}

// Holds reports whether this daemon is in a run of the agent, anywhere
// from before the move of the agent to running to after its move back. An
// agent this member recorded as running that it does not hold is stranded
// (a write lost to an outage): the daemon's recovery frees it.
func (s *Scheduler) Holds(key store.AgentKey) bool {
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	return s.holding[key] > 0
}

// hold marks a run of the agent as this daemon's until the returned
// function is called.
func (s *Scheduler) hold(key store.AgentKey) (release func()) {
	s.holdMu.Lock()
	s.holding[key]++
	s.holdMu.Unlock()
	return func() {
		s.holdMu.Lock()
		defer s.holdMu.Unlock()
		if s.holding[key]--; s.holding[key] <= 0 {
			delete(s.holding, key)
		}
	}
}

// Dispatcher hands turns to a cluster's job queue (host/cluster): a turn
// is one job per agent at a time, whichever member enqueues it, and any
// member with a free slot runs it through Turn.
type Dispatcher interface {
	// Enqueue asks for a turn of the agent. busy says a turn of it is
	// running now, so the request folded into one that may already have
	// looked at the inbox: the caller looks again shortly.
	Enqueue(ctx context.Context, key store.AgentKey) (busy bool, err error)
	// Fire asks, once cluster-wide, for the scheduled wake-up due at at.
	Fire(ctx context.Context, key store.AgentKey, at time.Time) error
}

// SetDispatcher makes the scheduler a member of a cluster: from now on its
// loops enqueue turns rather than run them. Call it before Start.
func (s *Scheduler) SetDispatcher(d Dispatcher) { s.dispatch = d }

// busyRecheck is how soon a loop whose turn folded into a running one
// looks again: that turn may have checked the inbox just before the new
// message landed.
const busyRecheck = 200 * time.Millisecond

// agentLoop is one agent's scheduling state. Only its own goroutine runs
// the agent; others signal it.
type agentLoop struct {
	key    store.AgentKey
	wake   chan struct{} // capacity 1: a burst of wakes is one wake
	cancel context.CancelFunc

	// mu guards the fields that follow.
	mu        sync.Mutex
	runCancel context.CancelCauseFunc // the run in flight, if any
	until     int64                   // its inbox high-water seq
	runID     string                  // its id
	runDone   chan struct{}           // closed when it has ended and is recorded
	watches   []*RunWatch
	lastFire  time.Time   // last scheduled wake-up, so one fire is not repeated
	last      WatchResult // the last finished run, for a watch armed late

	// held is the inbox seq a cancelled run was shown: the agent starts no
	// run for those messages alone (a pending wake or the poll would redo
	// what the user just cancelled) until a newer one arrives or its
	// schedule fires; that run sees them again. Only the loop's own
	// goroutine touches it.
	held int64
	// recheck makes the loop look again soon: its turn folded into one
	// running elsewhere in the cluster. Only the loop's goroutine touches it.
	recheck bool
	// external is the agent as last read when it is external (an outside
	// client joined over MCP; the daemon never runs it), and externalGen
	// the store's ConfigGeneration then: until an agent is redefined its
	// wake-ups need not read it again. Only the loop's goroutine touches
	// them.
	external    *store.Agent
	externalGen uint64

	// asked counts the wakes asked for and seen the ones a pass has taken
	// in; parked is set while the loop waits for its next trigger, and
	// slotWait while its run waits for a free slot. They tell a test when
	// the loop has handled every wake (quiet.go). l.mu guards them.
	asked, seen      uint64
	parked, slotWait bool
}

// Start starts a loop per agent; loops and their runs live until ctx ends.
// It returns once every agent is scheduled, so the daemon serves requests
// only after that.
func (s *Scheduler) Start(ctx context.Context) error {
	s.sub = s.team.Bus.Subscribe(wakeQueue)
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	agents, err := s.db.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		return err
	}
	for _, a := range agents {
		s.Add(a.Key())
	}
	return nil
}

// wakeQueue is the scheduler's queue on the bus: deep enough that only a
// stalled daemon overflows it.
const wakeQueue = 4096

// Run routes wakes to the agent loops until ctx ends, then waits for the
// loops (their runs are cancelled with ctx). If the bus drops it (the queue
// overflowed), it subscribes again and wakes every agent, so no wake that
// was lost leaves an inbox unread until the next poll.
func (s *Scheduler) Run(ctx context.Context) error {
	sub := s.sub
	defer func() { sub.Close() }()
	defer func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		s.wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-sub.C:
			switch {
			case ev.Remote:
				s.relayed(ctx, ev)
			case ev.Kind == team.EventWake:
				s.Wake(ev.Agent)
			}
			if s.afterEvent != nil {
				s.afterEvent(ev)
			}
		case <-sub.Dropped():
			s.log.Warn("scheduler fell behind the event bus; waking every agent")
			sub = s.team.Bus.Subscribe(wakeQueue)
			s.mu.Lock()
			keys := make([]store.AgentKey, 0, len(s.loops))
			for k := range s.loops {
				keys = append(keys, k)
			}
			s.mu.Unlock()
			for _, k := range keys {
				s.Wake(k)
			}
		}
	}
}

// Add starts scheduling an agent (no-op if it is scheduled already). The
// loop's first pass runs the agent if it has unread messages, which is how
// a restarted daemon picks up where the last one stopped.
func (s *Scheduler) Add(key store.AgentKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.ctx == nil || s.ctx.Err() != nil || s.loops[key] != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	l := &agentLoop{key: key, wake: make(chan struct{}, 1), cancel: cancel}
	s.loops[key] = l
	s.wg.Go(func() {
		defer func() {
			s.mu.Lock()
			if s.loops[key] == l {
				delete(s.loops, key)
			}
			s.mu.Unlock()
			l.finishAll(runspec.Outcome{}, errors.New("the agent was removed"), true)
		}()
		s.loop(ctx, l)
	})
}

// Remove stops scheduling an agent and cancels its run in flight.
func (s *Scheduler) Remove(key store.AgentKey) {
	s.mu.Lock()
	l := s.loops[key]
	delete(s.loops, key)
	s.mu.Unlock()
	if l != nil {
		l.cancel()
	}
}

// Wake asks an agent to look at its inbox now.
func (s *Scheduler) Wake(key store.AgentKey) {
	l := s.loopOf(key)
	if l == nil {
		return
	}
	l.mu.Lock()
	l.asked++
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // already pending: coalesced
	}
}

// Reschedule makes an agent re-read its schedule (after a change).
func (s *Scheduler) Reschedule(key store.AgentKey) { s.Wake(key) }

func (s *Scheduler) loop(ctx context.Context, l *agentLoop) {
	scheduled := false
	for {
		a, alive := s.tick(ctx, l, scheduled)
		if !alive {
			return
		}
		scheduled = false
		fire, at := s.nextFire(ctx, l, a)
		poll := s.cfg.PollInterval
		if l.recheck {
			l.recheck, poll = false, busyRecheck
		}
		l.park(true)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			l.park(false)
		case <-s.cfg.Clock.After(poll):
			l.park(false)
		case <-fire:
			l.park(false)
			if s.dispatch == nil {
				scheduled = true
				continue
			}
			// Every member's loop sees the same due time (it comes from
			// the store); the queue keeps one job per agent and time, and
			// Turn drops one a run made stale. The next is counted from
			// that due time, not from this member's clock, so that every
			// member asks for the same next one.
			l.mu.Lock()
			l.lastFire = at
			l.mu.Unlock()
			if err := s.dispatch.Fire(ctx, l.key, at); err != nil && ctx.Err() == nil {
				s.log.Warn("scheduled wake-up", "agent", l.key.String(), "error", err)
			}
		}
	}
}

// nextFire returns a channel that fires at the agent's next scheduled
// wake-up, or nil without a schedule. known is the agent as tick just read
// it, or nil to read it now.
func (s *Scheduler) nextFire(ctx context.Context, l *agentLoop, known *store.Agent) (<-chan time.Time, time.Time) {
	if known == nil {
		a, err := s.db.GetAgent(ctx, l.key)
		if err != nil {
			return nil, time.Time{}
		}
		known = &a
	}
	l.mu.Lock()
	fired := l.lastFire
	l.mu.Unlock()
	at, ok, err := s.nextDue(ctx, *known, fired)
	if !ok || err != nil {
		return nil, time.Time{}
	}
	return s.cfg.Clock.After(at.Sub(s.cfg.Clock.Now())), at
}

// nextDue is agent a's next scheduled wake-up, counted from its last
// activity in the store (interval schedules fire after that long idle, cron
// schedules at the next match), or from fired, the last wake-up fired, if
// that one is not already past it: a wake-up that started no run (a
// paused workflow, a stale one in a cluster) is not fired again. ok is
// false without a usable schedule.
func (s *Scheduler) nextDue(ctx context.Context, a store.Agent, fired time.Time) (at time.Time, ok bool, err error) {
	if a.Schedule == "" {
		return time.Time{}, false, nil
	}
	sched, err := workflow.ParseSchedule(a.Schedule)
	if err != nil {
		s.log.Warn("unusable schedule", "agent", a.Key().String(), "error", err)
		return time.Time{}, false, nil
	}
	last, err := s.db.LastActivity(ctx, a.Key())
	if err != nil {
		return time.Time{}, false, err
	}
	at = sched.Next(last)
	if !at.After(fired) {
		at = sched.Next(fired)
	}
	return at, true, nil
}

// tick handles one trigger. It returns false when the agent is gone, and
// the agent as it read it when it started no run (so that nextFire need not
// read it again: a wake of an outside agent, which never runs, costs one
// read).
func (s *Scheduler) tick(ctx context.Context, l *agentLoop, scheduled bool) (*store.Agent, bool) {
	gen, cacheable := s.db.ConfigGeneration()
	if l.external != nil && cacheable && gen == l.externalGen {
		// Every mention of an outside client wakes its loop: nothing to run.
		return l.external, true
	}
	l.external = nil
	a, err := s.db.GetAgent(ctx, l.key)
	if api.ErrorCode(err) == api.CodeNotFound {
		return nil, false
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("scheduler: read agent", "agent", l.key.String(), "error", err)
		}
		return nil, true
	}
	if a.Backend == "external" {
		l.external, l.externalGen = &a, gen
		return &a, true
	}
	if !a.State.Schedulable() {
		return &a, true
	}
	if scheduled {
		l.mu.Lock()
		l.lastFire = s.cfg.Clock.Now()
		l.mu.Unlock()
	}
	bs, run, err := s.due(ctx, a, scheduled, l.held)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("scheduler", "agent", l.key.String(), "error", err)
	}
	if !run {
		if a.State == api.AgentRunning && s.dispatch != nil && l.watched() {
			l.recheck = true // running elsewhere: the asker's turn comes after it
		}
		return &a, true
	}
	l.held = 0
	if s.dispatch != nil && !l.watched() {
		// A cluster member: the turn goes to the queue, from which any
		// member runs it. A loop someone here waits on (ask) runs it here,
		// so the asker follows it.
		busy, err := s.dispatch.Enqueue(ctx, l.key)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("enqueue a turn", "agent", l.key.String(), "error", err)
		}
		l.recheck = busy || err != nil
		return &a, true
	}
	s.runWithRetries(ctx, l, a, bs)
	return nil, true
}

// due decides whether agent a takes a turn now, for a loop's tick and a
// cluster's Turn alike, and returns its budgets for the run: its workflow
// runs, it has unread messages (a scheduled wake-up posts its prompt when
// it has none), not only the ones a cancelled run was shown (held, seq),
// and no budget of it is spent (one that is stops it over budget). An
// error is a failed read or write.
func (s *Scheduler) due(ctx context.Context, a store.Agent, scheduled bool, held int64) (budgets, bool, error) {
	wf, err := s.db.GetWorkflow(ctx, a.Workflow, a.Tag)
	if err != nil || wf.State != api.WorkflowRunning {
		return budgets{}, false, err
	}
	depth, err := s.db.InboxDepth(ctx, a.Key())
	if err != nil {
		return budgets{}, false, err
	}
	if scheduled && depth == 0 {
		if err := s.wakeup(ctx, a); err != nil {
			return budgets{}, false, fmt.Errorf("scheduled wake-up: %w", err)
		}
		depth = 1
	}
	if depth == 0 {
		return budgets{}, false, nil
	}
	if held > 0 && !scheduled {
		newest, err := s.db.NewestInboxSeq(ctx, a.Key())
		if err != nil || newest <= held {
			return budgets{}, false, err // only what was cancelled waits: hold it
		}
	}
	bs, err := s.budgetsOf(ctx, a, wf)
	var sb *spentBudget
	if err == nil {
		sb, err = s.overBudget(ctx, a, bs)
	}
	switch {
	case err != nil:
		return budgets{}, false, fmt.Errorf("budget check: %w", err)
	case sb != nil:
		s.stopOverBudget(ctx, a, sb)
		return budgets{}, false, nil
	}
	return bs, true, nil
}

// runWithRetries runs the agent until a run succeeds, retrying failures with
// jittered exponential backoff. After the last attempt (or a permanent
// error) the agent is failed and its messages stay unread until resumed.
func (s *Scheduler) runWithRetries(ctx context.Context, l *agentLoop, a store.Agent, bs budgets) {
	var crossed *overBudgetError
	for attempt := 1; ; attempt++ {
		out, err := s.runOnce(ctx, l, a, attempt, bs)
		switch {
		case err == nil:
			l.finishAll(out, nil, false)
			return
		case ctx.Err() != nil:
			return // the daemon is stopping or the agent was removed; unread stays unread
		case errors.Is(err, errNotSchedulable):
			return // paused, stopped or over budget meanwhile: its messages wait
		case errors.Is(err, errUserCancel):
			l.finishAll(out, err, false)
			return // runOnce left it idle; its inbox stays unread
		case errors.As(err, &crossed):
			l.finishAll(out, err, false)
			s.stopOverBudget(ctx, a, crossed.spent) // runOnce left it idle: now over_budget, its inbox unread
			return
		case backend.IsPermanent(err) || attempt >= s.cfg.Attempts:
			s.log.Warn("agent failed", "agent", l.key.String(), "attempts", attempt, "error", err)
			l.finishAll(out, err, false)
			// Only from idle: a pause or stop that came during the retries
			// is what the user asked for, and resume clears both.
			s.moveState(ctx, l.key, []api.AgentState{api.AgentIdle, api.AgentRunning}, api.AgentFailed, err.Error())
			s.notifyFailed(ctx, l.key, attempt, out, err)
			return
		}
		backoff := retryDelay(s.cfg.RetryBase, attempt, rand.Float64())
		s.log.Info("run failed; retrying", "agent", l.key.String(), "attempt", attempt, "backoff", backoff, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(backoff):
		}
		if fresh, err := s.db.GetAgent(ctx, l.key); err == nil {
			a = fresh // a changed config applies from the next attempt
		}
	}
}

// Retry delays: the jitter spreads agents that failed together (a model
// outage) without blurring the doubling, and the cap keeps a daemon
// configured for many attempts from waiting hours.
const (
	retryJitter   = 0.1 // ± this fraction of the delay
	maxRetryDelay = 5 * time.Minute
)

// retryDelay is the wait before retrying after failed attempt n (from 1):
// base, 2 × base, 4 × base … until maxRetryDelay, each within ±10 %. r is
// a random number in [0, 1).
func retryDelay(base time.Duration, n int, r float64) time.Duration {
	return backoff.Policy{Base: base, Max: maxRetryDelay, Jitter: retryJitter}.Delay(n, r)
}

// runOnce takes a slot, records what the run will be shown, runs it and,
// on success, settles it.
func (s *Scheduler) runOnce(ctx context.Context, l *agentLoop, a store.Agent, attempt int, bs budgets) (runspec.Outcome, error) {
	select {
	case s.slots <- struct{}{}:
	default:
		l.waitSlot(true)
		select {
		case s.slots <- struct{}{}:
			l.waitSlot(false)
		case <-ctx.Done():
			l.waitSlot(false)
			return runspec.Outcome{}, ctx.Err()
		}
	}
	// The slot is the run's: it is given back once the run is settled,
	// while its process is still being stopped and reaped (which the cap
	// need not wait for), or when runOnce returns, whichever is first.
	var release sync.Once
	freeSlot := func() { release.Do(func() { <-s.slots }) }
	defer freeSlot()

	inbox, err := s.db.Inbox(ctx, l.key, 0)
	if err != nil {
		return runspec.Outcome{}, err
	}
	if len(inbox) == 0 {
		return runspec.Outcome{}, nil // acked meanwhile (a resumed or deleted message)
	}
	until := inbox[len(inbox)-1].Seq
	before, err := s.db.LatestSeq(ctx, l.key.Scope())
	if err != nil {
		return runspec.Outcome{}, err
	}
	// The move to running is conditional: a pause (or stop) that landed
	// since the tick read the agent wins, and nothing starts.
	from := []api.AgentState{api.AgentIdle, api.AgentRunning}
	if s.dispatch != nil {
		// In a cluster the store is what keeps an agent to one run at a
		// time: only an idle agent may start one, on whichever member.
		from = from[:1]
	}
	defer s.hold(l.key)()
	if !s.moveState(ctx, l.key, from, api.AgentRunning, "") {
		return runspec.Outcome{}, errNotSchedulable
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runID := runspec.NewRunID()
	l.startRun(cancel, until, runID)
	defer l.endRun()

	hard, err := s.hardBudget(ctx, a, bs)
	if err != nil {
		s.log.Warn("budget check", "agent", l.key.String(), "error", err)
	}
	var crossed *spentBudget // a hard budget this run crossed, which cancelled it
	start := time.Now()
	started := ""  // the run's id once the backend was entered (a run that never started has no record to name)
	ended := false // the settle moved the agent out of running (or found it moved)
	out, err := s.sup.Run(runCtx, runspec.RunSpec{ID: runID, Agent: a, Attempt: attempt, InboxUntil: until, Inbox: inbox,
		Settle: s.settle(ctx, a, before, &ended, freeSlot),
		OnStart: func(id string) {
			started = id
			s.cfg.Observer.RunWaited(a.Backend, time.Since(inbox[0].CreatedAt))
			s.team.Bus.Publish(team.Event{Kind: team.EventRunStarted, Agent: l.key, Run: &team.RunInfo{ID: id, Attempt: attempt}})
		},
		OnEvent: func(e backend.Event) {
			if hard != nil && e.Kind == backend.EventUsage && e.Usage != nil && crossed == nil {
				if crossed = hard(*e.Usage); crossed != nil {
					cancel(errOverBudget)
				}
			}
			l.forward(e) // never blocks: a watcher that falls behind is dropped
			if e.Kind == backend.EventToolCall && e.Tool != nil {
				s.team.Bus.Publish(team.Event{Kind: team.EventTool, Agent: l.key, Tool: &team.ToolInfo{Name: e.Tool.Name, Args: string(e.Tool.Args)}})
			}
		},
	})
	if err != nil && errors.Is(context.Cause(runCtx), errUserCancel) {
		err = errUserCancel
		l.held = until
	}
	if err != nil && crossed != nil {
		err = &overBudgetError{crossed}
	}
	if ctx.Err() == nil && !ended {
		// Only from running: a pause, stop or budget stop that came
		// during the run stays. Moved before the run's end is published,
		// so whoever sees the end sees the agent's state after it. A
		// settled run's end has moved it already, in the same write.
		s.moveStateDurably(l.key, []api.AgentState{api.AgentRunning}, api.AgentIdle, "")
	}
	info := &team.RunInfo{ID: started, Attempt: attempt, DurationMS: time.Since(start).Milliseconds()}
	if err != nil {
		info.Error = err.Error()
		s.team.Bus.Publish(team.Event{Kind: team.EventRunFailed, Agent: l.key, Run: info})
	} else {
		s.team.Bus.Publish(team.Event{Kind: team.EventRunFinished, Agent: l.key, Run: info})
	}
	return out, err
}

// settle returns how a successful run is settled: its inbox acked up to
// what it was shown, its result posted as the agent unless it said
// something in the channel itself, and its end recorded, all in one store
// transaction (store.SettleRun), so a crash can neither lose the reply nor
// ack without it. The reply is composed like any message (mentions, long
// content as a resource) and announced once committed. ctx is the agent
// loop's, for the BeforeSettle hook. Unless the daemon is stopping, the
// same write moves the agent from running to idle (ended then says so).
func (s *Scheduler) settle(ctx context.Context, a store.Agent, before int64, ended *bool, settled func()) func(context.Context, runspec.Outcome, json.RawMessage) error {
	return func(txCtx context.Context, out runspec.Outcome, usage json.RawMessage) error {
		st := store.Settlement{RunID: out.Run.ID, Usage: usage, SinceSeq: before, Events: out.Unwritten, Idle: ctx.Err() == nil}
		st.InTx, _ = ctx.Value(settleHookKey{}).(store.TxHook)
		if strings.TrimSpace(out.Result) != "" {
			m, err := s.team.Compose(txCtx, team.SendRequest{Scope: a.Key().Scope(), From: a.Name, Content: out.Result})
			if err == nil {
				st.Reply = &m
			} else if spoke, serr := s.db.SpokeSince(txCtx, a.Key(), before); serr != nil || !spoke {
				// Only an agent that answered through its tools may end
				// with a result that cannot be posted.
				return fmt.Errorf("post the run's result: %w", err)
			}
		}
		if s.cfg.BeforeSettle != nil {
			if err := s.cfg.BeforeSettle(ctx, out.Run.ID); err != nil {
				return err
			}
		}
		done, err := s.db.SettleRun(txCtx, st)
		if err != nil {
			return err
		}
		if done.Posted {
			s.team.Announce(done.Reply)
		}
		*ended = st.Idle
		s.publishMove(a.Key(), api.AgentIdle, "", done.Idle, nil)
		settled()
		return nil
	}
}

// moveState moves an agent to state if it is in one of from (one store
// write), publishes the change, and reports whether it moved.
func (s *Scheduler) moveState(ctx context.Context, key store.AgentKey, from []api.AgentState, state api.AgentState, errMsg string) bool {
	moved, err := s.db.MoveAgentState(context.WithoutCancel(ctx), key, from, state, errMsg)
	return s.publishMove(key, state, errMsg, moved, err)
}

// moveStateDurably is moveState for the moves that end a run: while the
// store is unavailable it retries (store.UntilReachable), since a dropped
// move would leave the agent running for good, until the daemon stops.
func (s *Scheduler) moveStateDurably(key store.AgentKey, from []api.AgentState, state api.AgentState, errMsg string) bool {
	moved := false
	err := store.UntilReachable(s.cfg.Lifetime, func(ctx context.Context) error {
		var err error
		moved, err = s.db.MoveAgentState(ctx, key, from, state, errMsg)
		return err
	}, func(err error) {
		s.log.Warn("set agent state: the store is unreachable; retrying until it is back", "agent", key.String(), "state", state, "error", err)
	})
	return s.publishMove(key, state, errMsg, moved, err)
}

// publishMove reports a move's outcome: a failed write is logged (a
// missing agent is no news), a move made is published.
func (s *Scheduler) publishMove(key store.AgentKey, state api.AgentState, errMsg string, moved bool, err error) bool {
	if err != nil {
		if api.ErrorCode(err) != api.CodeNotFound {
			s.log.Warn("set agent state", "agent", key.String(), "error", err)
		}
		return false
	}
	if moved {
		s.team.Bus.Publish(team.Event{Kind: team.EventAgentState, Agent: key, State: string(state), Error: errMsg})
	}
	return moved
}

// watched reports whether someone here follows the agent's next run (ask).
func (l *agentLoop) watched() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.watches) > 0
}

// wakeup posts an agent's scheduled wake-up prompt to it.
func (s *Scheduler) wakeup(ctx context.Context, a store.Agent) error {
	prompt := a.WakeupPrompt
	if prompt == "" {
		prompt = DefaultWakeupPrompt
	}
	// The wake-up's span is the root of the trace its run joins through
	// the message, as a kickoff's is.
	how := "cron"
	if strings.HasPrefix(strings.TrimSpace(a.Schedule), "@every ") {
		how = "interval"
	}
	ctx, span := telemetry.Workflow(ctx, s.cfg.Tracing.Tracer(), a.Workflow, a.Tag, how)
	defer span.End()
	_, err := s.team.Send(ctx, team.SendRequest{Scope: a.Key().Scope(), From: team.SenderSystem, Kind: store.KindSystem,
		Content: "@" + a.Name + " " + prompt})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// loopOf is the agent's loop here, nil if it is not scheduled.
func (s *Scheduler) loopOf(key store.AgentKey) *agentLoop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[key]
}

// relayed acts on an event another cluster member published. A cancel
// reaches the run if it is here; the rest matters only to someone here
// waiting on the agent (ask): a wake wakes the loop (the member that
// published it asked for the turn already), and the end of a run the
// other member ran, or the agent's failure there, is the asker's answer.
// A relayed message stands for its recipients' wakes, which the relay
// does not send again (host/cluster).
func (s *Scheduler) relayed(ctx context.Context, ev team.Event) {
	if m := ev.Message; ev.Kind == team.EventMessage && m != nil {
		for _, r := range m.Recipients {
			k := store.AgentKey{Name: r, Workflow: m.Workflow, Tag: m.Tag}
			if l := s.loopOf(k); r != m.Sender && l != nil && l.watched() {
				s.Wake(k)
			}
		}
		return
	}
	l := s.loopOf(ev.Agent)
	switch {
	case l == nil:
	case ev.Kind == team.EventCancelRun:
		l.cancelRun(ev.State) // ours or not: only the member running it has it
	case !l.watched():
	case ev.Kind == team.EventWake:
		s.Wake(ev.Agent)
	case (ev.Kind == team.EventRunFinished || ev.Kind == team.EventRunFailed) && ev.Run != nil:
		go s.finishRemote(ctx, l, ev.Run.ID)
	case ev.Kind == team.EventAgentState && ev.State == string(api.AgentFailed):
		l.finishAll(runspec.Outcome{}, fmt.Errorf("%s failed on another member: %s", display(ev.Agent), ev.Error), true)
	}
}

// DefaultMaxConcurrent is the run cap when Config.MaxConcurrent is unset:
// two runs per core.
func DefaultMaxConcurrent() int { return 2 * runtime.NumCPU() }
