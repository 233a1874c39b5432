package pluginclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// wait is how long a test waits for something that should happen at once.
const wait = 10 * time.Second

// recv waits for a value on ch, failing the test after wait.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// collect is an Events that records what arrives.
type collect struct {
	mu     sync.Mutex
	events []backend.Event
}

func (c *collect) Send(e backend.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
	return nil
}

func (c *collect) got() []backend.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events
}

var request = backend.Request{
	RunID:   "run-1",
	Attempt: 2,
	Agent: backend.Agent{Name: "alice", Workflow: "review", Tag: "main", Model: "m",
		System: "be brief", Config: json.RawMessage(`{"k":[1,2]}`)},
	Daemon:        backend.MCPServer{Name: "agent-worker", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
	MCPServers:    []backend.MCPServer{{Name: "fs", Command: []string{"fs-mcp", "/"}, Env: map[string]string{"A": "b"}}},
	WorkDir:       "/tmp/w",
	ProjectDir:    "/tmp/p",
	ResumeSession: "sess-0",
}

// The plugin gets the request and the daemon gets every event, in order,
// with all its fields.
func TestRunRoundTrip(t *testing.T) {
	t.Parallel()
	events := []backend.Event{
		{Kind: backend.EventSession, SessionID: "sess-1"},
		{Kind: backend.EventText, Text: "Hel"},
		{Kind: backend.EventText, Text: "lo"},
		{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c1", Name: "channel_send", Args: json.RawMessage(`{"text":"hi"}`)}},
		{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "c1", Name: "channel_send", Result: "sent", IsError: true}},
		{Kind: backend.EventHeartbeat},
		{Kind: backend.EventLog, Text: "warning: slow"},
		{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: 10, OutputTokens: 20, CostUSD: 0.5}},
		{Kind: backend.EventResult, Text: "Hello"},
	}
	var got backend.Request
	b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		got = req
		for _, e := range events {
			if err := ev.Send(e); err != nil {
				return err
			}
		}
		return nil
	}))
	var sink collect
	if err := b.Run(t.Context(), request, &sink); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if diff := cmp.Diff(request, got); diff != "" {
		t.Errorf("request in the plugin (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(events, sink.got()); diff != "" {
		t.Errorf("events in the daemon (-want +got):\n%s", diff)
	}
}

// The daemon acts on the class and the Permanent mark of a plugin's error
// and shows its text unchanged.
func TestRunErrorsKeepClassAndText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err       error
		class     error
		permanent bool
	}{
		"not found":           {sdk.Errorf(sdk.ErrNotFound, "model %q not found", "gpt-9"), sdk.ErrNotFound, false},
		"conflict":            {sdk.Errorf(sdk.ErrConflict, "session busy"), sdk.ErrConflict, false},
		"invalid":             {sdk.Errorf(sdk.ErrInvalid, "config: max_turns must be > 0"), sdk.ErrInvalid, false},
		"permission":          {sdk.Errorf(sdk.ErrPermission, "API key rejected"), sdk.ErrPermission, false},
		"unavailable":         {fmt.Errorf("call model: %w", sdk.Errorf(sdk.ErrUnavailable, "429 rate limited")), sdk.ErrUnavailable, false},
		"plain":               {errors.New("claude exited with status 2"), nil, false},
		"permanent":           {backend.Permanent(errors.New("claude: command not found")), nil, true},
		"permanent and class": {backend.Permanent(sdk.Errorf(sdk.ErrInvalid, "unknown model")), sdk.ErrInvalid, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
				if err := ev.Send(backend.Event{Kind: backend.EventText, Text: "before"}); err != nil {
					return err
				}
				return tc.err
			}))
			var sink collect
			err := b.Run(t.Context(), request, &sink)
			if err == nil {
				t.Fatal("Run = nil, want the plugin's error")
			}
			if err.Error() != tc.err.Error() {
				t.Errorf("text = %q, want %q", err, tc.err)
			}
			if sdk.Class(err) != tc.class || (tc.class != nil && !errors.Is(err, tc.class)) {
				t.Errorf("class = %v, want %v", sdk.Class(err), tc.class)
			}
			if backend.IsPermanent(err) != tc.permanent {
				t.Errorf("IsPermanent = %v, want %v", backend.IsPermanent(err), tc.permanent)
			}
			if len(sink.got()) != 1 {
				t.Errorf("events before the error = %v, want the one text event", sink.got())
			}
		})
	}
}

// Cancelling the daemon's ctx cancels the plugin's Run.
func TestCancelStopsPluginRun(t *testing.T) {
	t.Parallel()
	started, stopped := make(chan struct{}), make(chan error, 1)
	b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, request, &collect{}) }()
	recv(t, started, "the plugin's Run to start")
	cancel()
	if err := recv(t, stopped, "the plugin's Run to see the cancellation"); !errors.Is(err, context.Canceled) {
		t.Errorf("plugin ctx error = %v, want context.Canceled", err)
	}
	if err := recv(t, done, "the daemon's Run to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// When the daemon cannot take an event (its store failed), the plugin's
// Send fails so the backend stops working for nobody.
func TestDaemonSendFailureFailsPluginSend(t *testing.T) {
	t.Parallel()
	pluginErr := make(chan error, 1)
	b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		for {
			if err := ev.Send(backend.Event{Kind: backend.EventHeartbeat}); err != nil {
				pluginErr <- err
				return err
			}
		}
	}))
	refused := errors.New("store: disk full")
	err := b.Run(t.Context(), request, backend.EventsFunc(func(backend.Event) error { return refused }))
	if !errors.Is(err, refused) {
		t.Errorf("Run = %v, want the daemon's own Send error", err)
	}
	if err := recv(t, pluginErr, "the plugin's Send to fail"); err == nil {
		t.Error("the plugin's Send succeeded after the daemon refused an event")
	}
}

// Backends may send from several goroutines; every event arrives once.
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	const senders, each = 4, 50
	b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					if err := ev.Send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("%d/%d", g, i)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}))
	var sink collect
	if err := b.Run(t.Context(), request, &sink); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range sink.got() {
		seen[e.Text] = true
	}
	if len(sink.got()) != senders*each || len(seen) != senders*each {
		t.Errorf("got %d events (%d distinct), want %d", len(sink.got()), len(seen), senders*each)
	}
}

// A plugin author's mistakes are reported to the author, in the plugin.
func TestPluginSendRejects(t *testing.T) {
	t.Parallel()
	leaked := make(chan backend.Events, 1)
	b := serveBackend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		leaked <- ev
		if err := ev.Send(backend.Event{Kind: "txt", Text: "typo"}); !errors.Is(err, sdk.ErrInvalid) {
			return fmt.Errorf("Send of an unknown kind = %v, want sdk.ErrInvalid", err)
		}
		return nil
	}))
	var sink collect
	if err := b.Run(t.Context(), request, &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.got()) != 0 {
		t.Errorf("the daemon got %v from a rejected Send", sink.got())
	}
	if err := recv(t, leaked, "the plugin's Events").Send(backend.Event{Kind: backend.EventText, Text: "late"}); err == nil {
		t.Error("Send after Run returned succeeded, want an error")
	}
}
