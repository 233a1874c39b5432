package backendtest

import (
	"context"
	"errors"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Option adapts the suite to one backend.
type Option func(*config)

type config struct {
	request func(backend.Request) backend.Request
	hanging func(backend.Request) backend.Request
	timeout time.Duration
}

// WithRequest adapts every request the suite sends, for a backend that
// needs more than identity to run offline (a Config pointing at a fake CLI
// or a local model, say).
func WithRequest(f func(backend.Request) backend.Request) Option {
	return func(c *config) { c.request = f }
}

// WithHangingRequest turns a request into one that makes the backend block
// until its context is cancelled (for the mock, a hang step). Without it the
// cancellation test is skipped, because the suite cannot otherwise tell a
// backend that stops on cancel from one that simply finished.
func WithHangingRequest(f func(backend.Request) backend.Request) Option {
	return func(c *config) { c.hanging = f }
}

// WithTimeout bounds each run that is expected to finish on its own
// (default 1 minute); a slow real model may need more.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// How long Run may take to return once it has to: the daemon's supervisor
// gives a cancelled run about this long before it kills the process.
const (
	cancelGrace      = 10 * time.Second
	unreachableGrace = 30 * time.Second
	// extraSends is how many events a backend may still send after one
	// failed (say, from a heartbeat goroutine that has not noticed yet).
	extraSends = 3
)

// Run runs the conformance tests as parallel subtests of t, each with its
// own backend from newBackend and its own fake Daemon; newBackend must be
// safe to call concurrently.
func Run(t *testing.T, newBackend func(t *testing.T) backend.Backend, opts ...Option) {
	t.Helper()
	cfg := &config{request: func(r backend.Request) backend.Request { return r }, timeout: time.Minute}
	for _, o := range opts {
		o(cfg)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *config, backend.Backend)
	}{
		{"InboxRunEndsWithResultOrMessage", testInboxRun},
		{"EmptyInboxRunSucceeds", testEmptyInbox},
		{"CancelStopsRun", testCancel},
		{"FailedSendStopsRun", testSendError},
		{"UnreachableDaemonIsAnError", testUnreachable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, cfg, newBackend(t))
		})
	}
}

func testInboxRun(t *testing.T, cfg *config, b backend.Backend) {
	d := NewDaemon(t)
	d.Post("user", "@alice please reply with a one-line status report")
	rec := newRecorder(t, nil)
	o := runFor(t, b, cfg.request(d.Request("alice")), rec, cfg.timeout)
	if o.err != nil {
		t.Fatalf("Run over a seeded inbox = %v, want nil", o.err)
	}
	events := rec.all()
	checkEvents(t, events)
	results := countKind(events, backend.EventResult)
	if results == 0 && !slices.Contains(d.Calls(), "channel_send") {
		t.Errorf("the run produced neither an EventResult nor a channel_send call (tools called: %v); the team would never hear from it", d.Calls())
	}
	if results > 1 {
		t.Errorf("the run sent %d EventResults, want at most one", results)
	}
}

func testEmptyInbox(t *testing.T, cfg *config, b backend.Backend) {
	d := NewDaemon(t)
	d.Post("user", "a message for no one in particular")
	rec := newRecorder(t, nil)
	if o := runFor(t, b, cfg.request(d.Request("alice")), rec, cfg.timeout); o.err != nil {
		t.Fatalf("Run with an empty inbox (a scheduled wake) = %v, want nil", o.err)
	}
	checkEvents(t, rec.all())
}

func testCancel(t *testing.T, cfg *config, b backend.Backend) {
	if cfg.hanging == nil {
		t.Skip("backendtest: no WithHangingRequest option, so the suite cannot make this backend block; cancellation is untested")
	}
	d := NewDaemon(t)
	d.Post("user", "@alice take your time")
	rec := newRecorder(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := start(ctx, b, cfg.hanging(cfg.request(d.Request("alice"))), rec)

	// Cancel once the backend is blocked: it has started (an event or a
	// tool call) and then stays quiet for a moment.
	if o, returned := settle(d, rec, done); returned {
		t.Fatalf("Run returned %v before it was cancelled; the hanging request did not make it block", o.err)
	}
	cancel()
	select {
	case o := <-done:
		o.check(t)
		if o.err == nil {
			t.Errorf("a cancelled Run returned nil: the daemon would ack an inbox the run never handled")
		}
	case <-time.After(cancelGrace):
		t.Fatalf("Run did not return within %v of its context being cancelled", cancelGrace)
	}
}

func testSendError(t *testing.T, cfg *config, b backend.Backend) {
	d := NewDaemon(t)
	d.Post("user", "@alice please reply with a one-line status report")
	rec := newRecorder(t, errors.New("backendtest: the daemon stopped listening to this run"))
	o := runFor(t, b, cfg.request(d.Request("alice")), rec, cfg.timeout)
	n := rec.sends()
	if n == 0 {
		t.Skipf("the backend sent no events (Run = %v), so there was no failed Send to react to", o.err)
	}
	if o.err == nil {
		t.Errorf("Run returned nil although events.Send failed; it should return an error")
	}
	if n-1 > extraSends {
		t.Errorf("Run called events.Send %d more times after it failed; it should stop sending", n-1)
	}
}

func testUnreachable(t *testing.T, cfg *config, b backend.Backend) {
	d := NewDaemon(t)
	req := cfg.request(d.Request("alice"))
	req.Daemon.URL = "http://" + closedAddr(t) + "/mcp"
	rec := newRecorder(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*unreachableGrace)
	defer cancel()
	select {
	case o := <-start(ctx, b, req, rec):
		o.check(t)
		if o.err == nil {
			t.Errorf("Run against an unreachable daemon returned nil, want an error")
		}
	case <-time.After(unreachableGrace):
		t.Fatalf("Run against an unreachable daemon (%s) did not return within %v", req.Daemon.URL, unreachableGrace)
	}
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// outcome is how a Run ended.
type outcome struct {
	err   error
	panic any
	stack []byte
}

func (o outcome) check(t *testing.T) {
	t.Helper()
	if o.panic != nil {
		t.Fatalf("Run panicked: %v\n%s", o.panic, o.stack)
	}
}

// start runs b in a goroutine; the outcome arrives on the channel.
func start(ctx context.Context, b backend.Backend, req backend.Request, rec *recorder) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{panic: p, stack: debug.Stack()}
			}
			rec.finish()
			ch <- o
		}()
		o.err = b.Run(ctx, req, rec)
	}()
	return ch
}

// runFor runs b until it returns, failing the test if that takes longer
// than timeout (plus the cancellation grace).
func runFor(t *testing.T, b backend.Backend, req backend.Request, rec *recorder, timeout time.Duration) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	select {
	case o := <-start(ctx, b, req, rec):
		o.check(t)
		return o
	case <-time.After(timeout + cancelGrace):
		t.Fatalf("Run did not return within %v, nor within %v of its deadline", timeout, cancelGrace)
		return outcome{}
	}
}

// settle waits until the run has done something and then been quiet for a
// moment (at most 5 s), or until it returns.
func settle(d *Daemon, rec *recorder, done <-chan outcome) (outcome, bool) {
	const quiet = 250 * time.Millisecond
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, since := -1, time.Now()
	for {
		select {
		case o := <-done:
			return o, true
		case <-deadline:
			return outcome{}, false
		case <-tick.C:
			n := len(d.Calls()) + rec.sends()
			if n != last {
				last, since = n, time.Now()
			} else if n > 0 && time.Since(since) >= quiet {
				return outcome{}, false
			}
		}
	}
}

// recorder is the Events of a test run.
type recorder struct {
	sendErr error

	// mu guards the fields that follow.
	mu     sync.Mutex
	events []backend.Event
	n      int
	done   bool
	late   int
}

func newRecorder(t *testing.T, sendErr error) *recorder {
	r := &recorder{sendErr: sendErr}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.late > 0 {
			t.Errorf("the backend sent %d events after Run returned; a run's goroutines must stop before Run returns", r.late)
		}
	})
	return r
}

func (r *recorder) Send(e backend.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.done {
		r.late++
		return errors.New("backendtest: Run has returned")
	}
	if r.sendErr != nil {
		return r.sendErr
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) finish() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}

func (r *recorder) sends() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *recorder) all() []backend.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// checkEvents fails on events the daemon could not record.
func checkEvents(t *testing.T, events []backend.Event) {
	t.Helper()
	for i, e := range events {
		var problem string
		switch e.Kind {
		case backend.EventText, backend.EventResult, backend.EventLog, backend.EventHeartbeat:
		case backend.EventToolCall, backend.EventToolResult:
			if e.Tool == nil || e.Tool.Name == "" {
				problem = "carries no Tool with a Name"
			}
		case backend.EventUsage:
			if e.Usage == nil {
				problem = "carries no Usage"
			}
		case backend.EventSession:
			if e.SessionID == "" {
				problem = "carries no SessionID"
			}
		default:
			problem = "has an unknown kind"
		}
		if problem != "" {
			t.Errorf("event %d (%s) %s: %+v", i, e.Kind, problem, e)
		}
	}
}

func countKind(events []backend.Event, k backend.EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}
