package host

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/httpapi"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// chattyScript is a mock script that streams n text events, then answers.
func chattyScript(n int) ([]map[string]any, string) {
	var steps []map[string]any
	var all strings.Builder
	for i := range n {
		s := fmt.Sprintf("w%d ", i)
		all.WriteString(s)
		steps = append(steps, map[string]any{"text": s})
	}
	return append(steps, map[string]any{"result": "done talking"}), all.String()
}

// An ask watcher that never drains its events does not hold up the run:
// the run finishes, a watcher that keeps reading still gets every event,
// and the stalled one is told it was dropped.
func TestStalledRunWatcherIsDroppedAndTheRunFinishes(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	script, text := chattyScript(200)
	mockAgent(t, th, "chatty", script...)
	bus := watchEvents(t, th)
	key := agentKey("chatty")

	// The stalled watcher has room for a few events; the reader for all
	// of them, so it keeps up however the goroutines are scheduled.
	stalled, err := th.sched.Watch(key, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Stop(false)
	reader, err := th.sched.Watch(key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Stop(false)
	type result struct {
		text string
		res  scheduler.WatchResult
	}
	got := make(chan result, 1)
	go func() {
		var b strings.Builder
		for {
			select {
			case e := <-reader.Events():
				if e.Kind == backend.EventText {
					b.WriteString(e.Text)
				}
			case r := <-reader.Done():
				for len(reader.Events()) > 0 {
					if e := <-reader.Events(); e.Kind == backend.EventText {
						b.WriteString(e.Text)
					}
				}
				got <- result{b.String(), r}
				return
			case <-reader.Dropped():
				got <- result{text: "dropped"}
				return
			}
		}
	}()
	m, err := th.team.Send(context.Background(), team.SendRequest{Scope: key.Scope(), From: team.SenderUser, Content: "@chatty talk"})
	if err != nil {
		t.Fatal(err)
	}
	stalled.Arm(m.Seq)
	reader.Arm(m.Seq)

	bus.next("the run to finish despite a stalled watcher", runOf(team.EventRunFinished, "chatty"))
	select {
	case <-stalled.Dropped():
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled watcher was never told it was dropped")
	}
	select {
	case r := <-got:
		if r.text != text || r.res.Err != nil || r.res.Out.Result != "done talking" {
			t.Errorf("the reading watcher got %d of %d bytes of text, outcome %+v, %v", len(r.text), len(text), r.res.Out.Result, r.res.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reading watcher never got the run's outcome")
	}
}

// An ask client that stops reading is told, once it reads again, that it
// fell behind and where the reply will be; the run finished without it.
func TestStalledAskIsToldItFellBehind(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	script, _ := chattyScript(scheduler.AskQueue + 100)
	mockAgent(t, th, "chatty", script...)
	bus := watchEvents(t, th)

	release := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		_, err := th.sched.Ask(context.Background(), api.Target{Agent: "chatty", Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}, "talk", func(backend.Event) {
			once.Do(func() { <-release }) // the client stops reading
		})
		errc <- err
	}()
	bus.next("the run to finish while its ask client is stalled", runOf(team.EventRunFinished, "chatty"))
	close(release)
	select {
	case err := <-errc:
		if api.ErrorCode(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "fell behind") || !strings.Contains(err.Error(), "since_seq=") {
			t.Errorf("stalled ask ended with %v; want an unavailable error saying it fell behind and where to read the reply", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled ask never ended")
	}
	if said := saidBy(t, th, "chatty"); len(said) != 1 || said[0] != "done talking" {
		t.Errorf("chatty said %q in the channel; want its reply", said)
	}
}

// stallingWriter is an SSE client whose connection stops taking bytes
// after the first event until released.
type stallingWriter struct {
	header  http.Header
	open    chan struct{} // closed when the stream is announced
	stalled chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	body    bytes.Buffer
}

func (w *stallingWriter) Header() http.Header { return w.header }
func (w *stallingWriter) WriteHeader(int)     { close(w.open) }
func (w *stallingWriter) Flush()              {}
func (w *stallingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.stalled); <-w.release })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}

// An event stream whose client stops reading is dropped rather than
// silently losing events: publishing never waits for it, another
// subscriber still gets every event, and the stream ends with an error
// event saying to reconnect.
func TestStalledEventStreamIsDropped(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	other := watchEvents(t, th)
	w := &stallingWriter{header: http.Header{}, open: make(chan struct{}), stalled: make(chan struct{}), release: make(chan struct{})}
	ended := make(chan error, 1)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "/events", nil)
		r.Header.Set("Authorization", "Bearer "+th.Token())
		th.srv.Handler.ServeHTTP(w, r)
		ended <- nil
	}()
	key := agentKey("ghost")
	publish := func(state string) {
		th.team.Bus.Publish(team.Event{Kind: team.EventAgentState, Agent: key, State: state})
	}
	// The stream subscribes before it is announced; its first event gets
	// it stuck writing.
	select {
	case <-w.open:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream never started")
	}
	publish("first")
	sent := 1
	select {
	case <-w.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream never wrote its first event")
	}
	for range httpapi.StreamQueue * 2 {
		publish("flood")
		sent++
	}
	close(w.release)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled stream was never ended")
	}
	w.mu.Lock()
	body := w.body.String()
	w.mu.Unlock()
	if !strings.Contains(body, "event: error\n") || !strings.Contains(body, "fell behind") || !strings.Contains(body, "reconnect") {
		t.Errorf("stalled stream did not end with an error event saying to reconnect; its tail:\n%s", body[max(0, len(body)-300):])
	}
	for i := range sent {
		other.next(fmt.Sprintf("event %d of %d on the subscriber that keeps up", i+1, sent), func(ev team.Event) bool {
			return ev.Kind == team.EventAgentState && ev.Agent == key
		})
	}
}
