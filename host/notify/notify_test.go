package notify

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Sign is HMAC-SHA256 in hex, as RFC 4231's test case 2 gives it.
func TestSign(t *testing.T) {
	t.Parallel()
	got := Sign("Jefe", []byte("what do ya want for nothing?"))
	if want := "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, limit := time.Second, 10*time.Minute
	tests := map[string]struct {
		n    int
		r    float64
		want time.Duration
	}{
		"first, no jitter":   {1, 0.5, time.Second},
		"second":             {2, 0.5, 2 * time.Second},
		"tenth":              {10, 0.5, 512 * time.Second},
		"capped":             {11, 0.5, 10 * time.Minute},
		"far past the cap":   {200, 0.5, 10 * time.Minute},
		"jitter low":         {3, 0, 3600 * time.Millisecond},
		"jitter high":        {3, 0.999999, 4399999 * time.Microsecond},
		"capped, jitter low": {30, 0, 9 * time.Minute},
	}
	for name, tc := range tests {
		if got := Backoff(base, limit, tc.n, tc.r).Round(time.Microsecond); got != tc.want {
			t.Errorf("%s: Backoff(n=%d, r=%v) = %v, want %v", name, tc.n, tc.r, got, tc.want)
		}
	}
}

func TestShowURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:pw@hooks.example.com/a/b?token=s3cret#x": "https://hooks.example.com/a/b",
		"http://127.0.0.1:8080/hook":                           "http://127.0.0.1:8080/hook",
		"http://[::1]:9/h?":                                    "http://[::1]:9/h",
	} {
		if got := ShowURL(in); got != want {
			t.Errorf("ShowURL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/s3cret?x=1": "https://hooks.slack.com/…",
		"http://127.0.0.1:8080":                             "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":                            "http://127.0.0.1:8080",
	} {
		if got := logURL(in); got != want {
			t.Errorf("logURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// receiver is a webhook receiver: it answers with status() and records
// what it got, one request at a time.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	status int
	got    []received
	srv    *httptest.Server
}

type received struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{t: t, status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			t.Error(err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, received{req.URL.Path, req.Header.Clone(), b})
		w.WriteHeader(r.status)
		_, _ = w.Write([]byte("not today\nthanks"))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// fixture is a store with a workflow team:main, and a notifier over it
// whose loop runs until the test ends.
func fixture(t *testing.T, cfg Config) (*Notifier, *store.DB) {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db"), store.Options{Daemon: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveWorkflow(t.Context(), store.Workflow{Name: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	cfg.DB, cfg.Member = db, "m1"
	if cfg.RetryBase == 0 {
		cfg.RetryBase = time.Millisecond
	}
	n := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		db.Close()
	})
	return n, db
}

func deliveries(t *testing.T, db *store.DB) map[string]store.NotifyDelivery {
	t.Helper()
	ds, err := db.ListDeliveries(t.Context(), store.DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.NotifyDelivery{}
	for _, d := range ds {
		out[d.ID] = d
	}
	return out
}

// An event goes to each subscribed webhook once (the workflow's and the
// daemon's, a webhook named twice once), signed with the secret read from
// the environment, with its id and event in the headers and a body with
// the text, the structured fields and the console link. Who did not
// subscribe to the event gets nothing.
func TestEmitDeliversSigned(t *testing.T) {
	t.Parallel()
	signed, plain, other := newReceiver(t, http.StatusNoContent), newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	env := map[string]string{"HOOK_SECRET": "s3cret"}
	n, db := fixture(t, Config{
		Subs:      []workflow.Notify{{Webhook: plain.srv.URL + "/daemon", Events: []Kind{RunFailed}}, {Webhook: other.srv.URL, Events: []Kind{Idle}}},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		BaseURL:   func() string { return "http://127.0.0.1:5099" },
	})
	ctx := t.Context()
	scope := store.Scope{Workflow: "team", Tag: "main"}
	err := n.Subscribe(ctx, scope, []workflow.Notify{
		{Webhook: signed.srv.URL + "/hook?k=1", Events: []Kind{RunFailed, Question}, SecretEnv: "HOOK_SECRET", Line: 3},
		{Webhook: plain.srv.URL + "/daemon", Events: []Kind{RunFailed}, Line: 5}, // the daemon's too: once
	})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Wants(ctx, scope, RunFailed) || n.Wants(ctx, scope, LoopGuard) || !n.Wants(ctx, store.Scope{Workflow: "x", Tag: "y"}, Idle) {
		t.Errorf("Wants does not follow the subscriptions")
	}
	ds, err := n.Emit(ctx, Event{Kind: RunFailed, Workflow: "team", Tag: "main", Agent: "alice", IDs: map[string]string{"run": "run_1"},
		Text: "alice@team failed for good", Fields: map[string]any{"error": "boom"}})
	if err != nil || len(ds) != 2 {
		t.Fatalf("Emit = %+v, %v; want two deliveries", ds, err)
	}
	testkit.WaitFor(t, "both deliveries", func() bool { return len(signed.requests()) == 1 && len(plain.requests()) == 1 })

	got := signed.requests()[0]
	if sig := got.header.Get(api.HeaderNotifySignature); !hmac.Equal([]byte(sig), []byte(Sign("s3cret", got.body))) {
		t.Errorf("signature %q does not match the body under the secret", sig)
	}
	byURL := map[string]string{}
	for _, d := range ds {
		byURL[d.URL] = d.ID
	}
	if id := got.header.Get(api.HeaderNotifyDelivery); id != byURL[signed.srv.URL+"/hook?k=1"] || got.header.Get(api.HeaderNotifyEvent) != "run_failed" {
		t.Errorf("headers %v", got.header)
	}
	var body api.NotificationBody
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	want := api.NotificationBody{Text: "alice@team failed for good", Event: "run_failed", Delivery: got.header.Get(api.HeaderNotifyDelivery),
		Workflow: "team", Tag: "main", Agent: "alice", Target: "alice@team", IDs: map[string]string{"run": "run_1"},
		Fields: map[string]any{"error": "boom"}, Console: "http://127.0.0.1:5099/console/team/team/main"}
	if diff := cmp.Diff(want, body, cmpIgnoreTime); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if p := plain.requests()[0]; p.header.Get(api.HeaderNotifySignature) != "" {
		t.Errorf("a subscription without secret_env got a signature")
	}
	testkit.WaitFor(t, "both recorded delivered", func() bool {
		for _, d := range deliveries(t, db) {
			if d.State != store.DeliveryDelivered || d.Attempts != 1 {
				return false
			}
		}
		return true
	})
	if len(other.requests()) != 0 {
		t.Errorf("a webhook not subscribed to run_failed got %d requests", len(other.requests()))
	}
	if ds, err := n.Emit(ctx, Event{Kind: LoopGuard, Workflow: "team", Tag: "main"}); err != nil || len(ds) != 0 {
		t.Errorf("an event no one listens to made %+v, %v", ds, err)
	}
}

var cmpIgnoreTime = cmp.Comparer(func(a, b time.Time) bool { return true })

// A receiver that answers 500 gets the delivery again, under the same id,
// until it answers 2xx; then it is delivered and not sent again. The
// last error is the receiver's status and a line of its answer.
func TestRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, http.StatusInternalServerError)
	n, db := fixture(t, Config{RetryBase: 5 * time.Millisecond})
	ctx := t.Context()
	scope := store.Scope{Workflow: "team", Tag: "main"}
	if err := n.Subscribe(ctx, scope, []workflow.Notify{{Webhook: r.srv.URL, Events: []Kind{Idle}}}); err != nil {
		t.Fatal(err)
	}
	ds, err := n.Emit(ctx, Event{Kind: Idle, Workflow: "team", Tag: "main", Text: "idle"})
	if err != nil || len(ds) != 1 {
		t.Fatal(ds, err)
	}
	testkit.WaitFor(t, "three failed attempts", func() bool { return len(r.requests()) >= 3 })
	d := deliveries(t, db)[ds[0].ID]
	if d.State != store.DeliveryPending || d.LastStatus != 500 || d.LastError != "HTTP 500 Internal Server Error: not today thanks" {
		t.Errorf("while the receiver fails: %+v", d)
	}
	r.setStatus(http.StatusOK)
	testkit.WaitFor(t, "delivered", func() bool { return deliveries(t, db)[ds[0].ID].State == store.DeliveryDelivered })
	seen := len(r.requests())
	// A later event wakes the loop: the delivered one is not sent again.
	if _, err := n.Emit(ctx, Event{Kind: Idle, Workflow: "team", Tag: "main", Text: "idle again"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the second event", func() bool { return len(r.requests()) == seen+1 })
	for _, req := range r.requests() {
		if id := req.header.Get(api.HeaderNotifyDelivery); id != ds[0].ID && !strings.HasPrefix(id, "nd_") {
			t.Errorf("delivery id %q", id)
		}
	}
	if got := r.requests()[seen].header.Get(api.HeaderNotifyDelivery); got == ds[0].ID {
		t.Errorf("the delivered notification was sent again")
	}
}

// A delivery its receiver never takes fails for good once retrying would
// pass GiveUp; one whose secret is not in the environment is never sent
// unsigned, and says why.
func TestGivesUpAndNeverSendsUnsigned(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, http.StatusBadGateway)
	n, db := fixture(t, Config{RetryBase: time.Millisecond, GiveUp: 50 * time.Millisecond,
		LookupEnv: func(string) (string, bool) { return "", false }})
	ctx := t.Context()
	scope := store.Scope{Workflow: "team", Tag: "main"}
	err := n.Subscribe(ctx, scope, []workflow.Notify{{Webhook: r.srv.URL, Events: []Kind{Idle}}, {Webhook: r.srv.URL + "/signed", Events: []Kind{Idle}, SecretEnv: "MISSING"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Emit(ctx, Event{Kind: Idle, Workflow: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "both failed", func() bool {
		ds, err := n.List(ctx, true)
		return err == nil && len(ds) == 2
	})
	for _, d := range deliveries(t, db) {
		if strings.HasSuffix(d.URL, "/signed") && !strings.Contains(d.LastError, "secret_env MISSING is not set") {
			t.Errorf("unsigned one: %+v", d)
		}
	}
	for _, req := range r.requests() {
		if req.path == "/signed" {
			t.Errorf("sent without its signature")
		}
	}
	if err := n.Check("wf.yaml", []workflow.Notify{{SecretEnv: "MISSING", Line: 7}}); api.ErrorCode(err) != api.CodeInvalid ||
		!strings.Contains(err.Error(), "wf.yaml:7: notify 1: secret_env MISSING is not set") {
		t.Errorf("Check = %v", err)
	}
}

// A connection error is stored without the URL, which may hold a token.
func TestErrorsDoNotRepeatTheURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL + "/hook?token=s3cret"
	srv.Close()
	n, db := fixture(t, Config{GiveUp: time.Nanosecond})
	if err := n.Subscribe(t.Context(), store.Scope{Workflow: "team", Tag: "main"}, []workflow.Notify{{Webhook: dead, Events: []Kind{Idle}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Emit(t.Context(), Event{Kind: Idle, Workflow: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the attempt", func() bool {
		for _, d := range deliveries(t, db) {
			return d.State == store.DeliveryFailed
		}
		return false
	})
	for _, d := range deliveries(t, db) {
		if strings.Contains(d.LastError, "s3cret") || !strings.Contains(d.LastError, "POST: ") {
			t.Errorf("last error %q", d.LastError)
		}
	}
	l, err := n.List(t.Context(), false)
	if err != nil || len(l) != 1 || strings.Contains(l[0].URL, "s3cret") {
		t.Errorf("list = %+v, %v", l, err)
	}
}

// A test event goes to every subscription of the workflow whatever its
// events; a workflow with none is told how to add one.
func TestTestEvent(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, http.StatusOK)
	n, _ := fixture(t, Config{})
	ctx := t.Context()
	scope := store.Scope{Workflow: "team", Tag: "main"}
	if _, err := n.TestEvent(ctx, scope); api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "has no notify: webhooks") {
		t.Errorf("test without subscriptions: %v", err)
	}
	if _, err := n.TestEvent(ctx, store.Scope{Workflow: "nope", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("test of an unknown workflow: %v", err)
	}
	if err := n.Subscribe(ctx, scope, []workflow.Notify{{Webhook: r.srv.URL, Events: []Kind{MemberDown}}}); err != nil {
		t.Fatal(err)
	}
	ids, err := n.TestEvent(ctx, scope)
	if err != nil || len(ids) != 1 {
		t.Fatalf("TestEvent = %v, %v", ids, err)
	}
	testkit.WaitFor(t, "the test", func() bool { return len(r.requests()) == 1 })
	if h := r.requests()[0].header; h.Get(api.HeaderNotifyEvent) != "test" || h.Get(api.HeaderNotifyDelivery) != ids[0] {
		t.Errorf("headers %v", h)
	}
}

// A receiver that refuses a notification (a 4xx but a timeout, conflict
// or rate limit) is not asked again: it fails at its first attempt, with
// the receiver's answer as its last error.
func TestRefusedFailsAtOnce(t *testing.T) {
	t.Parallel()
	for status, wantFailed := range map[int]bool{http.StatusGone: true, http.StatusBadRequest: true, http.StatusTooManyRequests: false, http.StatusServiceUnavailable: false} {
		if got := refused(status); got != wantFailed {
			t.Errorf("refused(%d) = %v, want %v", status, got, wantFailed)
		}
	}
	r := newReceiver(t, http.StatusGone)
	n, db := fixture(t, Config{})
	if err := n.Subscribe(t.Context(), store.Scope{Workflow: "team", Tag: "main"}, []workflow.Notify{{Webhook: r.srv.URL, Events: []Kind{Idle}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Emit(t.Context(), Event{Kind: Idle, Workflow: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the failure", func() bool {
		l, err := n.List(t.Context(), true)
		return err == nil && len(l) == 1
	})
	for _, d := range deliveries(t, db) {
		if d.Attempts != 1 || d.LastStatus != http.StatusGone || d.LastError != "HTTP 410 Gone: not today thanks" {
			t.Errorf("refused delivery = %+v", d)
		}
	}
	if len(r.requests()) != 1 {
		t.Errorf("the receiver was asked %d times", len(r.requests()))
	}
}

// A report carries the API token as GitLab or GitHub wants it and no
// signature; a notification is signed and carries no token.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	body := []byte(`{"body":"LGTM"}`)
	tests := map[string]struct {
		auth string
		want map[string]string
	}{
		"gitlab": {store.AuthGitLab, map[string]string{"PRIVATE-TOKEN": "tok", "Authorization": "", api.HeaderNotifySignature: ""}},
		"github": {store.AuthGitHub, map[string]string{"Authorization": "Bearer tok", "Accept": "application/vnd.github+json", "PRIVATE-TOKEN": "", api.HeaderNotifySignature: ""}},
		"notify": {"", map[string]string{api.HeaderNotifySignature: Sign("tok", body), "PRIVATE-TOKEN": "", "Authorization": ""}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "http://example.com/x", nil)
			authorize(req, tc.auth, "tok", body)
			for k, v := range tc.want {
				if got := req.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
