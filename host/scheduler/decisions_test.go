package scheduler

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// The scheduler's decisions, in process: a real store in a temporary
// directory, a fake Runner that starts no plugin process, and a fake clock
// that the test moves, so a poll, a schedule or a backoff comes when the
// test says and never by sleeping.

// fakeClock is a Clock whose time moves only on Advance. Every After is
// recorded, so a test can see what the scheduler waits for.
type fakeClock struct {
	// mu guards the fields that follow.
	mu    sync.Mutex
	now   time.Time
	waits []clockWait
	asked []time.Duration
}

type clockWait struct {
	at time.Time
	c  chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.asked = append(c.asked, d)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waits = append(c.waits, clockWait{c.now.Add(d), ch})
	return ch
}

// Advance moves the clock and fires every wait it reaches.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = slices.DeleteFunc(c.waits, func(w clockWait) bool {
		if w.at.After(c.now) {
			return false
		}
		w.c <- c.now
		return true
	})
}

// waiting reports whether someone waits for a duration below limit.
func (c *fakeClock) waiting(limit time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.waits, func(w clockWait) bool { return w.at.Sub(c.now) < limit })
}

// backoffs are the waits asked for below limit: the retries' backoffs
// when the poll is longer.
func (c *fakeClock) backoffs(limit time.Duration) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, d := range c.asked {
		if d > 0 && d < limit {
			out = append(out, d)
		}
	}
	return out
}

// fakeRunner is a Runner that records each run in the store as the
// supervisor does and settles it, starting no process. fail, when set,
// decides an attempt's error; hold, when set, keeps each run until it is
// read.
type fakeRunner struct {
	db     *store.DB
	calls  chan runspec.RunSpec
	fail   func(spec runspec.RunSpec) error
	result string
	hold   chan struct{}
}

func (f *fakeRunner) Run(ctx context.Context, spec runspec.RunSpec) (runspec.Outcome, error) {
	run, err := f.db.StartRun(ctx, store.Run{ID: spec.ID, Agent: spec.Agent.Key(), Backend: spec.Agent.Backend,
		Attempt: spec.Attempt, InboxUntilSeq: spec.InboxUntil})
	if err != nil {
		return runspec.Outcome{}, err
	}
	if spec.OnStart != nil {
		spec.OnStart(spec.ID)
	}
	f.calls <- spec
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
		}
	}
	out := runspec.Outcome{Run: run, Result: f.result}
	if f.fail != nil {
		if err := f.fail(spec); err != nil {
			if ferr := f.db.FinishRun(context.WithoutCancel(ctx), run.ID, api.RunFailed, err.Error(), nil); ferr != nil {
				return out, ferr
			}
			return out, err
		}
	}
	return out, spec.Settle(ctx, out, nil)
}

// schedHarness is a running scheduler over a fresh store with agents in
// global:main.
type schedHarness struct {
	db     *store.DB
	team   *team.Service
	s      *Scheduler
	clock  *fakeClock
	runner *fakeRunner
	// barriers hears the markers settle publishes, once Run has handed
	// them on.
	barriers chan string
	marks    atomic.Int64
}

const testPoll = time.Hour // the poll comes only when a test moves the clock that far

func startScheduler(t *testing.T, cfg Config, runner *fakeRunner, agents ...store.Agent) *schedHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := &fakeClock{now: time.UnixMilli(time.Now().UnixMilli())}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "aw.db"), store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		a.Workflow, a.Tag = "global", "main"
		if a.Backend == "" {
			a.Backend = "mock"
		}
		if _, err := db.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	runner.db = db
	if runner.calls == nil {
		runner.calls = make(chan runspec.RunSpec, 100)
	}
	svc := team.New(team.Config{DB: db, Logger: hclog.NewNullLogger()})
	cfg.Clock = clk
	if cfg.PollInterval == 0 {
		cfg.PollInterval = testPoll
	}
	s := New(db, runner, svc, cfg, hclog.NewNullLogger())
	barriers := make(chan string, 10)
	s.afterEvent = func(ev team.Event) {
		if ev.Kind == barrierEvent {
			barriers <- ev.Agent.Name
		}
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if runner.hold != nil {
			close(runner.hold)
		}
		if err := <-done; err != nil {
			t.Errorf("scheduler Run: %v", err)
		}
		db.Close()
	})
	return &schedHarness{db: db, team: svc, s: s, clock: clk, runner: runner, barriers: barriers}
}

// barrierEvent is the kind of the markers settle publishes; the
// scheduler acts on no such event.
const barrierEvent = "test-barrier"

// settle waits until the scheduler has handled every trigger so far: a
// marker published after them has come through Run (the bus keeps their
// order, so every wake before it has reached its loop), and then every
// loop waits for its next trigger with no wake left to take in. With the
// fake clock still, nothing runs after that until the test acts.
func (h *schedHarness) settle(t *testing.T) {
	t.Helper()
	mark := fmt.Sprint("barrier-", h.marks.Add(1))
	h.team.Bus.Publish(team.Event{Kind: barrierEvent, Agent: store.AgentKey{Name: mark}})
	for {
		select {
		case got := <-h.barriers:
			if got != mark {
				continue
			}
		case <-time.After(testkit.Deadline):
			t.Fatalf("timed out waiting for the scheduler to hand on %s", mark)
		}
		break
	}
	testkit.WaitFor(t, "every agent loop waiting for its next trigger", h.s.quiet)
}

func agentKey(name string) store.AgentKey {
	return store.AgentKey{Name: name, Workflow: "global", Tag: "main"}
}

// send posts a line from the user to global:main, which wakes who it
// mentions.
func (h *schedHarness) send(t *testing.T, content string) {
	t.Helper()
	if _, err := h.team.Send(t.Context(), team.SendRequest{Scope: store.Scope{Workflow: "global", Tag: "main"}, From: team.SenderUser, Content: content}); err != nil {
		t.Fatal(err)
	}
}

// nextRun waits for the next run to start.
func (h *schedHarness) nextRun(t *testing.T, what string) runspec.RunSpec {
	t.Helper()
	select {
	case spec := <-h.runner.calls:
		return spec
	case <-time.After(testkit.Deadline):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

// noRun fails if a run has started. It waits for nothing: the caller
// first makes sure that no run can start (settle, a backoff or a slot
// waited for), so one that has not started by then never will.
func (h *schedHarness) noRun(t *testing.T, why string) {
	t.Helper()
	select {
	case spec := <-h.runner.calls:
		t.Fatalf("%s ran (attempt %d) %s", spec.Agent.Name, spec.Attempt, why)
	default:
	}
}

func (h *schedHarness) agent(t *testing.T, name string) store.Agent {
	t.Helper()
	a, err := h.db.GetAgent(t.Context(), agentKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (h *schedHarness) waitState(t *testing.T, name string, want api.AgentState) store.Agent {
	t.Helper()
	var a store.Agent
	testkit.WaitFor(t, name+" "+string(want), func() bool {
		a = h.agent(t, name)
		return a.State == want
	})
	return a
}

func (h *schedHarness) inboxDepth(t *testing.T, name string) int {
	t.Helper()
	n, err := h.db.InboxDepth(t.Context(), agentKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A message that mentions an agent wakes it: one run is shown the
// message, and once it settles its reply is in the channel, its inbox is
// read and it is idle; an agent not mentioned does not run.
func TestMentionRunsTheAgentOnceAndSettles(t *testing.T) {
	t.Parallel()
	h := startScheduler(t, Config{}, &fakeRunner{result: "done: the tests pass"}, store.Agent{Name: "alice"}, store.Agent{Name: "bob"})
	h.send(t, "@alice run the tests")
	spec := h.nextRun(t, "alice's run")
	if spec.Agent.Name != "alice" || spec.Attempt != 1 || len(spec.Inbox) != 1 || spec.Inbox[0].Content != "@alice run the tests" {
		t.Fatalf("run of %s attempt %d shown %+v", spec.Agent.Name, spec.Attempt, spec.Inbox)
	}
	h.waitState(t, "alice", api.AgentIdle)
	testkit.WaitFor(t, "alice's inbox read", func() bool { return h.inboxDepth(t, "alice") == 0 })
	ms, err := h.db.ReadChannel(t.Context(), store.Scope{Workflow: "global", Tag: "main"}, store.ReadOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ms, func(m store.Message) bool { return m.Sender == "alice" && m.Content == "done: the tests pass" }) {
		t.Errorf("alice's result is not in the channel: %+v", ms)
	}
	h.settle(t)
	h.noRun(t, "again after its inbox was read, or bob, who was not mentioned")
}

// An agent runs only while its workflow runs and it is schedulable: a
// paused agent's messages wait, and resuming it runs it for them.
func TestPausedAgentWaitsAndRunsWhenResumed(t *testing.T) {
	t.Parallel()
	h := startScheduler(t, Config{}, &fakeRunner{}, store.Agent{Name: "alice"})
	if err := h.s.Pause(t.Context(), agentKey("alice")); err != nil {
		t.Fatal(err)
	}
	h.send(t, "@alice while you were away")
	h.settle(t)
	h.noRun(t, "while paused")
	if n := h.inboxDepth(t, "alice"); n != 1 {
		t.Errorf("paused alice's inbox holds %d, want the message waiting", n)
	}
	if err := h.s.Resume(t.Context(), agentKey("alice")); err != nil {
		t.Fatal(err)
	}
	if spec := h.nextRun(t, "alice's run after resume"); spec.Inbox[0].Content != "@alice while you were away" {
		t.Errorf("resumed run shown %+v", spec.Inbox)
	}
}

// A message that reached the inbox without a wake (another process wrote
// it) is picked up by the poll.
func TestPollRunsAnAgentWhoseWakeWasLost(t *testing.T) {
	t.Parallel()
	h := startScheduler(t, Config{}, &fakeRunner{}, store.Agent{Name: "alice"})
	// The loop's first pass (which reads the inbox) is over once it waits.
	testkit.WaitFor(t, "the poll armed", func() bool { return h.clock.waiting(testPoll + time.Second) })
	if _, err := h.db.AppendMessage(t.Context(), store.NewMessage{Workflow: "global", Tag: "main", Sender: team.SenderUser,
		Content: "@alice written behind the daemon's back", Recipients: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	h.settle(t)
	h.noRun(t, "without a wake or a poll")
	h.clock.Advance(testPoll)
	if spec := h.nextRun(t, "the run the poll starts"); spec.Inbox[0].Content != "@alice written behind the daemon's back" {
		t.Errorf("polled run shown %+v", spec.Inbox)
	}
}

// An interval schedule wakes an idle agent that long after its last
// activity, with its wake-up prompt posted to it.
func TestIntervalScheduleWakesTheAgentWithItsPrompt(t *testing.T) {
	t.Parallel()
	h := startScheduler(t, Config{PollInterval: 24 * time.Hour}, &fakeRunner{},
		store.Agent{Name: "ticker", Schedule: "30m", WakeupPrompt: "check the build"})
	testkit.WaitFor(t, "the schedule armed", func() bool { return h.clock.waiting(31 * time.Minute) })
	h.settle(t)
	h.noRun(t, "before its schedule")
	h.clock.Advance(30 * time.Minute)
	spec := h.nextRun(t, "the scheduled run")
	if spec.Agent.Name != "ticker" || len(spec.Inbox) != 1 || spec.Inbox[0].Content != "@ticker check the build" || spec.Inbox[0].Sender != team.SenderSystem {
		t.Errorf("scheduled run shown %+v", spec.Inbox)
	}
}

// A failed attempt is retried after a backoff that doubles (within its
// jitter), and the run that succeeds settles the agent idle; nothing is
// retried before its backoff is over.
func TestFailedRunsAreRetriedWithDoublingBackoff(t *testing.T) {
	t.Parallel()
	h := startScheduler(t, Config{Attempts: 3, RetryBase: time.Second}, &fakeRunner{fail: func(spec runspec.RunSpec) error {
		if spec.Attempt < 3 {
			return errors.New("model overloaded")
		}
		return nil
	}}, store.Agent{Name: "alice"})
	h.send(t, "@alice go")
	for attempt := 1; attempt <= 3; attempt++ {
		if spec := h.nextRun(t, "an attempt"); spec.Attempt != attempt {
			t.Fatalf("attempt %d, want %d", spec.Attempt, attempt)
		}
		if attempt == 3 {
			break
		}
		// Once the backoff is armed, only the clock can start the next attempt.
		testkit.WaitFor(t, "the backoff", func() bool { return h.clock.waiting(time.Minute) })
		h.noRun(t, "before its backoff was over")
		h.clock.Advance(3 * time.Second)
	}
	h.waitState(t, "alice", api.AgentIdle)
	b := h.clock.backoffs(time.Minute)
	if len(b) != 2 || b[0] < 900*time.Millisecond || b[0] > 1100*time.Millisecond || b[1] < 1800*time.Millisecond || b[1] > 2200*time.Millisecond {
		t.Errorf("backoffs %v, want about 1s then about 2s", b)
	}
}

// After the last attempt, or at once on a permanent error, the agent is
// failed with the error, and its message stays unread for a resume.
func TestAgentFailsAfterItsAttemptsOrAPermanentError(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err      error
		attempts int
	}{
		"attempts run out": {errors.New("model overloaded"), 2},
		"permanent":        {backend.Permanent(errors.New("unknown model gpt-0")), 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := startScheduler(t, Config{Attempts: 2, RetryBase: time.Second},
				&fakeRunner{fail: func(runspec.RunSpec) error { return tc.err }}, store.Agent{Name: "alice"})
			h.send(t, "@alice go")
			for n := 1; n <= tc.attempts; n++ {
				h.nextRun(t, "an attempt")
				if n < tc.attempts {
					testkit.WaitFor(t, "the backoff", func() bool { return h.clock.waiting(time.Minute) })
					h.clock.Advance(3 * time.Second)
				}
			}
			a := h.waitState(t, "alice", api.AgentFailed)
			if !strings.Contains(a.Error, tc.err.Error()) {
				t.Errorf("failed agent's error %q, want it to say %q", a.Error, tc.err)
			}
			if n := h.inboxDepth(t, "alice"); n != 1 {
				t.Errorf("failed alice's inbox holds %d, want the message kept", n)
			}
			h.send(t, "@alice again")
			h.settle(t)
			h.noRun(t, "while failed")
		})
	}
}

// The daemon-wide cap: with one slot, a second agent's run waits for the
// first to end, then runs.
func TestRunsWaitForAFreeSlot(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	h := startScheduler(t, Config{MaxConcurrent: 1}, &fakeRunner{hold: hold}, store.Agent{Name: "alice"}, store.Agent{Name: "bob"})
	h.send(t, "@alice @bob both of you")
	first := h.nextRun(t, "the first run")
	other := "bob"
	if first.Agent.Name == "bob" {
		other = "alice"
	}
	testkit.WaitFor(t, other+" waiting for a slot", func() bool { return h.s.waitsForSlot(agentKey(other)) })
	h.noRun(t, "while the only slot is taken")
	if a := h.agent(t, other); a.State != api.AgentIdle {
		t.Errorf("%s is %s while waiting for a slot, want idle", other, a.State)
	}
	hold <- struct{}{}
	if second := h.nextRun(t, "the second run"); second.Agent.Name != other {
		t.Errorf("second run is %s's, want %s's", second.Agent.Name, other)
	}
	hold <- struct{}{}
}
