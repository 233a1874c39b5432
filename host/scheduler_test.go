package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// fakeClock is a Clock that only moves when the test says so.
type fakeClock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	c := &fakeClock{now: now}
	c.cond = sync.NewCond(&c.mu)
	return c
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
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	c.cond.Broadcast()
	return ch
}

// Advance moves time and fires every waiter that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.c <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// WaitFor blocks until some waiter is due at or before t: the scheduler
// has computed its next fire and is waiting for it.
func (c *fakeClock) WaitFor(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, w := range c.waiters {
			if !w.at.After(t) {
				return
			}
		}
		c.cond.Wait()
	}
}

// events collects bus events for a test.
type events struct {
	t   testing.TB
	sub *team.Subscription
}

func watchEvents(t testing.TB, th *testHost) *events {
	sub := th.team.Bus.Subscribe(100000)
	t.Cleanup(sub.Close)
	return &events{t: t, sub: sub}
}

// next waits for an event matching pred.
func (e *events) next(what string, pred func(team.Event) bool) team.Event {
	e.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-e.sub.C:
			if pred(ev) {
				return ev
			}
		case <-deadline:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func runOf(kind, agent string) func(team.Event) bool {
	return func(ev team.Event) bool { return ev.Kind == kind && ev.Agent.Name == agent }
}

// settled waits until agent has run and its inbox is empty.
func (e *events) settled(th *testHost, agent string) {
	e.t.Helper()
	for {
		ev := e.next(agent+" to finish a run", func(ev team.Event) bool {
			return ev.Agent.Name == agent && (ev.Kind == team.EventRunFinished || ev.Kind == team.EventRunFailed)
		})
		if ev.Kind == team.EventRunFailed {
			continue // a retry follows
		}
		a, err := th.DB().GetAgent(context.Background(), store.AgentKey{Name: agent, Workflow: "global", Tag: "main"})
		if err != nil {
			e.t.Fatal(err)
		}
		d, err := th.DB().InboxDepth(context.Background(), a.Key())
		if err != nil {
			e.t.Fatalf("%s's inbox depth: %v", agent, err)
		}
		if d == 0 {
			return
		}
	}
}

func agentKey(name string) store.AgentKey {
	return store.AgentKey{Name: name, Workflow: "global", Tag: "main"}
}

func depth(t testing.TB, th *testHost, name string) int {
	d, err := th.DB().InboxDepth(context.Background(), agentKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func runsOf(t testing.TB, th *testHost, name string) []store.Run {
	runs, err := th.DB().ListRuns(context.Background(), store.RunFilter{Agent: agentKey(name), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// noPoll makes wakes the only trigger, so a test proves wakes work.
func noPoll(c *Config) { c.Scheduler.PollInterval = time.Hour }

// The seed's step-4 check: a mention wakes the agent (not the poll), it
// replies and its inbox is empty; then alice asks bob and bob answers.
func TestMentionWakesAgentAndTeamTalks(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	mockAgent(t, th, "alice",
		map[string]any{"reply": "@bob please review the plan", "when": map[string]any{"from": "user"}},
		map[string]any{"reply": "thanks, merging", "when": map[string]any{"from": "bob"}})
	mockAgent(t, th, "bob", map[string]any{"reply": "@alice looks good to me", "when": map[string]any{"from": "alice"}})

	if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "@global", Message: "@alice ask @bob for a review"}); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's run to start", runOf(team.EventRunStarted, "alice"))
	// bob's first run (the user mentioned him too) may end before alice
	// asks him, so wait for the conversation's last line, then for both.
	ev.next("alice's thanks", func(e team.Event) bool {
		return e.Kind == team.EventMessage && e.Message != nil && e.Message.Sender == "alice" && e.Message.Content == "thanks, merging"
	})
	ev.settled(th, "alice")
	testkit.WaitFor(t, "bob's inbox to empty", func() bool { return depth(t, th, "bob") == 0 })
	ms, err := th.client().Peek(context.Background(), "@global", 20, 0)
	if err != nil {
		t.Fatalf("peek @global: %v", err)
	}
	var lines []string
	for _, m := range ms {
		lines = append(lines, m.From+": "+m.Content)
	}
	want := []string{"user: @alice ask @bob for a review", "alice: @bob please review the plan", "bob: @alice looks good to me", "alice: thanks, merging"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("channel:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if depth(t, th, "alice") != 0 || depth(t, th, "bob") != 0 {
		t.Errorf("inboxes not empty: alice %d bob %d", depth(t, th, "alice"), depth(t, th, "bob"))
	}
}

// A burst of 50 mentions while the agent runs gives at most 2 more runs,
// and every message is acked exactly once.
func TestBurstOfMentionsIsCoalesced(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	// The first run holds until the whole burst is sent: the gate, not a
	// sleep that a slow machine could outlast mid-burst.
	gate := filepath.Join(t.TempDir(), "burst-sent")
	mockAgent(t, th, "alice", map[string]any{"shell": "while [ ! -e " + gate + " ]; do sleep 0.05; done"}, map[string]any{"result": "ok"})
	c := th.client()
	if _, err := c.Send(context.Background(), api.SendRequest{Target: "alice", Message: "first"}); err != nil {
		t.Fatal(err)
	}
	ev.next("the first run", runOf(team.EventRunStarted, "alice"))
	var last int64
	for i := range 50 {
		m, err := c.Send(context.Background(), api.SendRequest{Target: "alice", Message: fmt.Sprintf("burst %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		last = m.Seq
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev.settled(th, "alice")
	runs := runsOf(t, th, "alice")
	if len(runs) > 3 {
		t.Errorf("%d runs for 1 + a burst of 50 messages, want at most 3", len(runs))
	}
	// Runs are newest first; each acks a later seq than the one before, and
	// the last covers every message.
	for i := len(runs) - 1; i > 0; i-- {
		if runs[i-1].InboxUntilSeq <= runs[i].InboxUntilSeq {
			t.Errorf("runs overlap: %d then %d", runs[i].InboxUntilSeq, runs[i-1].InboxUntilSeq)
		}
	}
	cur, err := th.DB().InboxCursor(context.Background(), agentKey("alice"))
	if err != nil || runs[0].InboxUntilSeq != last || cur < last {
		t.Errorf("last run acked up to %d (cursor %d, %v), want %d", runs[0].InboxUntilSeq, cur, err, last)
	}
}

func TestRetriesAndFailure(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{IdleTimeout: time.Second}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()

	// Fails twice, then succeeds: 3 runs, acked once.
	mockAgent(t, th, "flaky",
		map[string]any{"fail": "first", "when": map[string]any{"attempt": 1}},
		map[string]any{"fail": "second", "when": map[string]any{"attempt": 2}},
		map[string]any{"result": "third time lucky"})
	c.Send(ctx, api.SendRequest{Target: "flaky", Message: "go"})
	ev.settled(th, "flaky")
	runs := runsOf(t, th, "flaky")
	if len(runs) != 3 || runs[0].State != "succeeded" || runs[1].State != "failed" || runs[0].Attempt != 3 {
		t.Errorf("flaky runs = %+v", runs)
	}

	// Always fails: failed, messages unread, resume runs it again.
	mockAgent(t, th, "broken", map[string]any{"fail": "model unreachable"})
	c.Send(ctx, api.SendRequest{Target: "broken", Message: "go"})
	ev.next("broken to fail", func(e team.Event) bool {
		return e.Kind == team.EventAgentState && e.Agent.Name == "broken" && e.State == "failed"
	})
	a, err := c.GetAgent(ctx, api.Target{Agent: "broken", Workflow: "global", Tag: "main"})
	if err != nil || a.State != "failed" || !strings.Contains(a.Error, "model unreachable") || a.InboxDepth != 1 {
		t.Errorf("broken after 3 failures = %+v, %v", a, err)
	}
	if n := len(runsOf(t, th, "broken")); n != 3 {
		t.Errorf("broken ran %d times, want 3", n)
	}
	if h, err := c.Health(ctx); err != nil || len(h.Problems) != 1 || !strings.Contains(h.Problems[0], "model unreachable") {
		t.Errorf("status problems = %q, %v", h.Problems, err)
	}
	if _, err := c.Serve(ctx, api.RunRequest{Agent: "broken", Message: "again"}); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "resume") {
		t.Errorf("serve on a failed agent: %v", err)
	}
	if err := c.Resume(ctx, api.Target{Agent: "broken", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	ev.next("broken to run again", runOf(team.EventRunStarted, "broken"))
	if err := c.Resume(ctx, api.Target{Agent: "flaky", Workflow: "global", Tag: "main"}); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("resume of a healthy agent: %v", err)
	}

	// Hangs: killed at the idle timeout and retried.
	mockAgent(t, th, "stuck", map[string]any{"hang": true, "when": map[string]any{"attempt": 1}}, map[string]any{"result": "unstuck"})
	c.Send(ctx, api.SendRequest{Target: "stuck", Message: "go"})
	ev.settled(th, "stuck")
	runs = runsOf(t, th, "stuck")
	if len(runs) != 2 || !strings.Contains(runs[1].Error, "idle timeout") || runs[0].State != "succeeded" {
		t.Errorf("stuck runs = %+v", runs)
	}
}

func TestAskStreamsAndServeAnswers(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	mockAgent(t, th, "alice", map[string]any{"text": "Hello, "}, map[string]any{"text": "world"}, map[string]any{"result": "Hello, world"})
	var chunks []string
	res, err := th.client().Run(context.Background(), api.RunRequest{Agent: "alice", Message: "greet"},
		api.RunHandlers{Chunk: func(c api.RunChunk) { chunks = append(chunks, c.Text) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 || strings.Join(chunks, "") != "Hello, world" || res.Content != "Hello, world" {
		t.Errorf("ask: chunks %q, result %+v", chunks, res)
	}
	served, err := th.client().Serve(context.Background(), api.RunRequest{Agent: "alice", Message: "greet"})
	if err != nil || served.Content != res.Content {
		t.Errorf("serve = %+v, %v; want the same content", served, err)
	}
	// Cancelling ask cancels the run, which is not retried.
	mockAgent(t, th, "slow", map[string]any{"hang": true})
	ctx, cancel := context.WithCancel(context.Background())
	ev := watchEvents(t, th)
	go func() {
		ev.next("slow to start", runOf(team.EventRunStarted, "slow"))
		cancel()
	}()
	if _, err := th.client().Run(ctx, api.RunRequest{Agent: "slow", Message: "go"}, api.RunHandlers{}); err == nil {
		t.Fatal("cancelled ask returned no error")
	}
	ev.next("the cancelled run to end", runOf(team.EventRunFailed, "slow"))
	if runs := runsOf(t, th, "slow"); len(runs) != 1 || runs[0].State != "cancelled" {
		t.Errorf("slow runs after cancel = %+v", runs)
	}
}

func TestSchedulesFireOnTheClockAndSurviveRestart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 22, 10, 0, 30, 0, time.Local)
	clock := newFakeClock(start)
	home := t.TempDir()
	withClock := func(c *Config) {
		c.Home, c.Now, c.Scheduler.Clock, c.Scheduler.PollInterval = home, clock.Now, clock, time.Hour
	}
	th, _ := pluginHost(t, runner.SupervisorConfig{}, withClock)
	ev := watchEvents(t, th)
	c := th.client()
	ctx := context.Background()
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "standup", Backend: "mock", Schedule: "10m", WakeupPrompt: "post your standup"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "nightly", Backend: "mock", Schedule: "0 11 * * *"}); err != nil {
		t.Fatal(err)
	}
	// Interval: nothing before 10 idle minutes, a wake-up at 10.
	clock.WaitFor(start.Add(10 * time.Minute))
	clock.Advance(10 * time.Minute)
	ev.settled(th, "standup")
	ms, err := c.Peek(ctx, "@global", 10, 0)
	if err != nil || len(ms) == 0 || ms[0].From != "system" || ms[0].Content != "@standup post your standup" || ms[0].Kind != "system" {
		t.Errorf("wake-up message = %+v, %v", ms, err)
	}
	// Cron: 11:00 local time.
	eleven := time.Date(2026, 11, 22, 11, 0, 0, 0, time.Local)
	clock.WaitFor(eleven)
	clock.Advance(eleven.Sub(clock.Now()))
	ev.settled(th, "nightly")
	if n := len(runsOf(t, th, "nightly")); n != 1 {
		t.Errorf("nightly ran %d times at 11:00, want 1", n)
	}
	th.stop(t)

	// After a restart the schedules are still there and fire again.
	th2 := startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: th.catalog.Dirs()[:1], Now: clock.Now,
		Scheduler: scheduler.Config{Clock: clock, PollInterval: time.Hour}})
	ev2 := watchEvents(t, th2)
	// Whatever the restart re-queued finishes first, so the count below is
	// about the schedule alone.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := th2.DB().GetAgent(context.Background(), agentKey("standup"))
		if err == nil && a.State == "idle" && depth(t, th2, "standup") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("standup never settled after the restart: %+v, %v", a, err)
		}
		time.Sleep(20 * time.Millisecond) // polling another goroutine's store writes
	}
	before := len(runsOf(t, th2, "standup"))
	next := clock.Now().Add(10 * time.Minute)
	clock.WaitFor(next)
	clock.Advance(10 * time.Minute)
	ev2.next("the wake-up after the restart", func(e team.Event) bool {
		return e.Kind == team.EventMessage && e.Message.Sender == "system" && strings.HasPrefix(e.Message.Content, "@standup ")
	})
	ev2.settled(th2, "standup")
	if n := len(runsOf(t, th2, "standup")); n != before+1 {
		t.Errorf("standup runs after restart and 10 minutes: %d, want %d", n, before+1)
	}
}

// A session id a backend reports is handed back on the agent's next run.
func TestSessionsResume(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	mockAgent(t, th, "alice", map[string]any{"session": "conv-{{attempt}}"}, map[string]any{"reply": "resuming [{{resume}}]"})
	for i := range 2 {
		if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "alice", Message: fmt.Sprint("turn ", i)}); err != nil {
			t.Fatal(err)
		}
		ev.settled(th, "alice")
	}
	if replies := saidBy(t, th, "alice"); strings.Join(replies, "|") != "resuming []|resuming [conv-1]" {
		t.Errorf("alice's replies = %q", replies)
	}
}

// saidBy is what a standalone agent posted, oldest first.
func saidBy(t *testing.T, th *testHost, agent string) []string {
	t.Helper()
	ms, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.From == agent {
			out = append(out, m.Content)
		}
	}
	return out
}

// reset forgets the session a backend reported, so the next run starts a
// fresh conversation; an unknown agent is not found.
func TestResetForgetsSessions(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	mockAgent(t, th, "alice", map[string]any{"session": "conv-{{attempt}}"}, map[string]any{"reply": "resuming [{{resume}}]"})
	ctx := context.Background()
	for i := range 2 {
		if _, err := th.client().Send(ctx, api.SendRequest{Target: "alice", Message: fmt.Sprint("turn ", i)}); err != nil {
			t.Fatal(err)
		}
		ev.settled(th, "alice")
		if i == 0 {
			res, err := th.client().Reset(ctx, api.Target{Agent: "alice", Workflow: "global", Tag: "main"})
			if err != nil || res.Forgotten != 1 {
				t.Fatalf("reset = %+v, %v; want alice's one session forgotten", res, err)
			}
		}
	}
	if replies := saidBy(t, th, "alice"); strings.Join(replies, "|") != "resuming []|resuming []" {
		t.Errorf("alice's replies = %q, want no session resumed after the reset", replies)
	}
	_, err := th.client().Reset(ctx, api.Target{Agent: "ghost", Workflow: "global", Tag: "main"})
	if api.ErrorCode(err) != api.CodeNotFound || !strings.Contains(err.Error(), "no agent ghost") {
		t.Errorf("reset of an unknown agent = %v, want not found naming it", err)
	}
}

// An agent's state directory is the same on every run and goes with the
// agent.
func TestAgentStateDir(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	mockAgent(t, th, "alice", map[string]any{"reply": "state in {{state_dir}}"})
	var dirs []string
	for i := range 2 {
		if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "alice", Message: fmt.Sprint("turn ", i)}); err != nil {
			t.Fatal(err)
		}
		ev.settled(th, "alice")
	}
	ms, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil {
		t.Fatalf("peek @global: %v", err)
	}
	for _, m := range ms {
		if d, ok := strings.CutPrefix(m.Content, "state in "); ok && m.From == "alice" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) != 2 || dirs[0] != dirs[1] || !strings.HasPrefix(dirs[0], th.cfg.Home) {
		t.Fatalf("state dirs = %q", dirs)
	}
	if st, err := os.Stat(dirs[0]); err != nil || !st.IsDir() {
		t.Fatalf("state dir %s: %v", dirs[0], err)
	}
	if err := th.client().DeleteAgent(context.Background(), api.Target{Agent: "alice", Workflow: "global", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("state dir survived the agent: %v", err)
	}
}

// nextDelay waits until some waiter is due within limit of now and returns
// how far ahead the soonest one is; long waits (the poll) are ignored. It
// fails the test if no such waiter appears within 30 s of real time.
func (c *fakeClock) nextDelay(t testing.TB, limit time.Duration) time.Duration {
	t.Helper()
	expired := false
	timer := time.AfterFunc(30*time.Second, func() {
		c.mu.Lock()
		expired = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		best := time.Duration(-1)
		for _, w := range c.waiters {
			if d := w.at.Sub(c.now); d <= limit && (best < 0 || d < best) {
				best = d
			}
		}
		if best >= 0 {
			return best
		}
		if expired {
			t.Fatalf("nothing waited on the clock for less than %v", limit)
		}
		c.cond.Wait()
	}
}

// Retries after a crash wait 1 s, 2 s, 4 s (each ±10 %) on the scheduler's
// clock: the test moves a fake clock, so nothing really sleeps.
func TestRetryBackoffIsExponentialOnTheClock(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Now())
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) {
		c.Scheduler = scheduler.Config{Clock: clock, PollInterval: time.Hour, Attempts: 4, RetryBase: time.Second}
	})
	ev := watchEvents(t, th)
	mockAgent(t, th, "crashy", map[string]any{"crash": 3})
	if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "crashy", Message: "go"}); err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for want := time.Second; want <= 4*time.Second; want *= 2 {
		ev.next("a crashed run", runOf(team.EventRunFailed, "crashy"))
		d := clock.nextDelay(t, time.Minute)
		got = append(got, d)
		if lo, hi := want*9/10, want*11/10; d < lo || d > hi {
			t.Errorf("retry %d waits %v, want %v ± 10%%", len(got), d, want)
		}
		clock.Advance(d)
	}
	ev.next("crashy to fail after 4 attempts", func(e team.Event) bool {
		return e.Kind == team.EventAgentState && e.Agent.Name == "crashy" && e.State == "failed"
	})
	if n := len(runsOf(t, th, "crashy")); n != 4 {
		t.Errorf("crashy ran %d times, want 4 (delays %v)", n, got)
	}
}
