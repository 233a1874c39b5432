package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Kind is what an event is about: one of workflow.NotifyEvents, or Test.
type Kind = workflow.NotifyEvent

// The kinds of events.
const (
	Question   = workflow.NotifyQuestion
	Approval   = workflow.NotifyApproval
	RunFailed  = workflow.NotifyRunFailed
	OverBudget = workflow.NotifyOverBudget
	LoopGuard  = workflow.NotifyLoopGuard
	Idle       = workflow.NotifyIdle
	MemberDown = workflow.NotifyMemberDown
	Test       = workflow.NotifyTest
)

// Event is something the owner should hear about. Text is the one line a
// person reads (a chat shows it as is); the rest is for programs.
type Event struct {
	Kind Kind
	// Workflow and Tag are the workflow:tag it is about: its notify:
	// subscriptions hear it, beside the daemon's. Both "" for a
	// daemon-wide event.
	Workflow, Tag string
	// Agent is the agent it is about, "" for the whole team.
	Agent string
	// IDs are the ids it is about, by kind: "run", "question", "member".
	IDs  map[string]string
	Text string
	// Fields are its details: the error, the budget, the options…
	Fields map[string]any
	// Also are further workflows whose subscriptions hear it: for
	// member_down, those whose runs the dead member had.
	Also []store.Scope
}

// Observer hears each attempt's outcome (host/metrics): "delivered",
// "retry" or "failed". It must return at once.
type Observer interface {
	NotifyAttempt(event, outcome string)
}

type nopObserver struct{}

func (nopObserver) NotifyAttempt(string, string) {}

// Subscriptions are webhooks and the events each hears, as notify: and
// --notify-config list them.
type Subscriptions = []workflow.Notify

// Config is what a Notifier needs; zero values take the defaults.
type Config struct {
	DB *store.DB
	// Member is this daemon's id, which its claims on deliveries carry.
	Member string
	// Subs are the daemon-wide subscriptions (--notify-config).
	Subs []workflow.Notify
	// LookupEnv reads the secrets from the daemon's environment at each
	// attempt; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// BaseURL is the daemon's URL, for the console links; nil leaves them
	// out.
	BaseURL func() string
	// Client sends the POSTs; nil is a client with a 10 s timeout that
	// does not follow redirects (a 3xx is not a delivery).
	Client *http.Client
	// Retry tunes the backoff: the first retry's delay, doubling to
	// RetryMax, and GiveUp after which a delivery fails for good.
	RetryBase, RetryMax, GiveUp time.Duration
	// Lease is how long a claim on a delivery lasts: longer than a send.
	Lease    time.Duration
	Observer Observer
	Now      func() time.Time
	Log      hclog.Logger
}

// Defaults of Config.
const (
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 10 * time.Minute
	DefaultGiveUp    = 24 * time.Hour
	DefaultLease     = time.Minute
	sendTimeout      = 10 * time.Second
)

// Notifier emits events into the outbox and delivers them (Run).
type Notifier struct {
	cfg  Config
	log  hclog.Logger
	wake chan struct{} // capacity 1: Emit's nudge to Run
}

// New returns a Notifier; Run starts its delivery loop.
func New(cfg Config) *Notifier {
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.BaseURL == nil {
		cfg.BaseURL = func() string { return "" }
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: sendTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.GiveUp <= 0 {
		cfg.GiveUp = DefaultGiveUp
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Notifier{cfg: cfg, log: cfg.Log, wake: make(chan struct{}, 1)}
}

// LoadConfig reads the daemon's --notify-config file: problems come back
// with file:line:col, and a secret_env the environment lacks is refused
// like a workflow's.
func LoadConfig(path string, lookup func(string) (string, bool)) ([]workflow.Notify, error) {
	content, err := workflow.ReadLimited(path, "notify config "+path, workflow.MaxFileBytes)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "--notify-config: %w", err)
	}
	subs, err := workflow.ParseNotifyConfig(path, content)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "--notify-config %s:\n%w", path, err)
	}
	if err := checkSecrets(path, subs, lookup); err != nil {
		return nil, err
	}
	return subs, nil
}

// Check refuses subscriptions whose secret_env is not set in the daemon's
// environment, naming path:line of each, so a workflow does not start (or
// an edit is rejected) rather than send notifications it cannot sign.
func (n *Notifier) Check(path string, subs []workflow.Notify) error {
	return checkSecrets(path, subs, n.cfg.LookupEnv)
}

func checkSecrets(path string, subs []workflow.Notify, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var bad []string
	for i, s := range subs {
		if s.SecretEnv == "" {
			continue
		}
		if v, _ := lookup(s.SecretEnv); v == "" {
			bad = append(bad, fmt.Sprintf("%s:%d: notify %d: secret_env %s is not set in the daemon's environment: "+
				"set it to the secret the receiver checks and restart the daemon (`agent-worker stop --all`, then any command starts it), or remove secret_env to send unsigned", path, s.Line, i+1, s.SecretEnv))
		}
	}
	if bad != nil {
		return api.Errorf(api.CodeInvalid, "%s", strings.Join(bad, "\n"))
	}
	return nil
}

// Subscribe records subs as the subscriptions of scope (a workflow that
// loaded); none removes them.
func (n *Notifier) Subscribe(ctx context.Context, scope store.Scope, subs []workflow.Notify) error {
	rows := make([]store.NotifySub, len(subs))
	for i, s := range subs {
		events := make([]string, len(s.Events))
		for j, e := range s.Events {
			events[j] = string(e)
		}
		rows[i] = store.NotifySub{URL: s.Webhook, Events: events, SecretEnv: s.SecretEnv, Line: s.Line}
	}
	return n.cfg.DB.ReplaceNotifySubs(ctx, scope, rows)
}

// Wants reports whether any subscription would hear kind from scope: the
// idle watch looks only at workflows someone listens to.
func (n *Notifier) Wants(ctx context.Context, scope store.Scope, kind Kind) bool {
	subs, err := n.subscribers(ctx, Event{Kind: kind, Workflow: scope.Workflow, Tag: scope.Tag})
	return err == nil && len(subs) > 0
}

// target is one webhook an event goes to.
type target struct{ url, secretEnv string }

// subscribers are the webhooks that hear ev, each once: the daemon's
// (but for a test) and those of its workflows.
func (n *Notifier) subscribers(ctx context.Context, ev Event) ([]target, error) {
	var out []target
	add := func(url, secretEnv string) {
		t := target{url, secretEnv}
		for _, have := range out {
			if have == t {
				return
			}
		}
		out = append(out, t)
	}
	if ev.Kind != Test {
		for _, s := range n.cfg.Subs {
			if s.Wants(ev.Kind) {
				add(s.Webhook, s.SecretEnv)
			}
		}
	}
	scopes := ev.Also
	if ev.Workflow != "" {
		scopes = append([]store.Scope{{Workflow: ev.Workflow, Tag: ev.Tag}}, ev.Also...)
	}
	for _, scope := range scopes {
		subs, err := n.cfg.DB.ListNotifySubs(ctx, scope)
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if (workflow.Notify{Events: events(s.Events)}).Wants(ev.Kind) {
				add(s.URL, s.SecretEnv)
			}
		}
	}
	return out, nil
}

func events(ss []string) []Kind {
	out := make([]Kind, len(ss))
	for i, s := range ss {
		out[i] = Kind(s)
	}
	return out
}

// Emit puts ev in the outbox, one delivery per subscribed webhook, and
// wakes the delivery loop. It returns the deliveries, none when no one
// listens.
func (n *Notifier) Emit(ctx context.Context, ev Event) ([]store.NotifyDelivery, error) {
	subs, err := n.subscribers(ctx, ev)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	ds := make([]store.NotifyDelivery, len(subs))
	for i, s := range subs {
		id := store.NewDeliveryID()
		body, err := n.body(ev, id)
		if err != nil {
			return nil, err
		}
		ds[i] = store.NotifyDelivery{ID: id, Event: string(ev.Kind), Workflow: ev.Workflow, Tag: ev.Tag, URL: s.url, Body: string(body), SecretEnv: s.secretEnv}
	}
	out, err := n.cfg.DB.AddDeliveries(ctx, ds)
	if err != nil {
		return nil, err
	}
	n.log.Debug("notification queued", "event", ev.Kind, "workflow", ev.Workflow+":"+ev.Tag, "deliveries", len(out))
	n.Wake()
	return out, nil
}

// Wake tells the delivery loop that something was queued: a trigger's
// report, put in the outbox by host/triggers, is sent at once.
func (n *Notifier) Wake() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Notify is Emit for the parts that only report: the event is queued
// whatever the caller's context does next, and a failure is logged. A
// nil Notifier does nothing.
func (n *Notifier) Notify(ctx context.Context, ev Event) {
	if n == nil {
		return
	}
	if _, err := n.Emit(context.WithoutCancel(ctx), ev); err != nil {
		n.log.Warn("queue a notification", "event", ev.Kind, "workflow", ev.Workflow+":"+ev.Tag, "error", err)
	}
}

// TestEvent sends a test event to the subscriptions of scope and returns
// the delivery ids. A workflow without notify: is invalid.
func (n *Notifier) TestEvent(ctx context.Context, scope store.Scope) ([]string, error) {
	if _, err := n.cfg.DB.GetWorkflow(ctx, scope.Workflow, scope.Tag); err != nil {
		return nil, err
	}
	target := api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
	ds, err := n.Emit(ctx, Event{Kind: Test, Workflow: scope.Workflow, Tag: scope.Tag,
		Text: "agent-worker: a test notification for " + target + "; if you read this, its notify: webhook works"})
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, api.Errorf(api.CodeInvalid, "%s has no notify: webhooks: add e.g. notify: [{webhook: https://…, events: [question, run_failed]}] to its file", target)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids, nil
}

// body is the JSON a delivery of ev carries.
func (n *Notifier) body(ev Event, id string) ([]byte, error) {
	b := api.NotificationBody{Text: ev.Text, Event: string(ev.Kind), Delivery: id, Workflow: ev.Workflow, Tag: ev.Tag, Agent: ev.Agent,
		IDs: ev.IDs, Fields: ev.Fields, Time: n.cfg.Now().UTC()}
	if ev.Workflow != "" {
		b.Target = api.Target{Agent: ev.Agent, Workflow: ev.Workflow, Tag: ev.Tag}.Display()
	}
	if base := n.cfg.BaseURL(); base != "" {
		b.Console = base + "/console/"
		if ev.Workflow != "" { // host/console's team page
			b.Console += "team/" + url.PathEscape(ev.Workflow) + "/" + url.PathEscape(ev.Tag)
		}
	}
	return json.Marshal(b)
}

// List is GET /notifications: the newest deliveries (only failed ones
// with failed), their URLs without credentials or query.
func (n *Notifier) List(ctx context.Context, failed bool) ([]api.Notification, error) {
	ds, err := n.cfg.DB.ListDeliveries(ctx, store.DeliveryFilter{Failed: failed})
	if err != nil {
		return nil, err
	}
	out := make([]api.Notification, len(ds))
	for i, d := range ds {
		out[i] = api.Notification{ID: d.ID, Event: d.Event, Workflow: d.Workflow, Tag: d.Tag, URL: ShowURL(d.URL), State: d.State,
			Attempts: d.Attempts, LastError: d.LastError, LastStatus: d.LastStatus, DeliveredAt: d.DeliveredAt, CreatedAt: d.CreatedAt}
		if d.State == store.DeliveryPending {
			out[i].NextAt = d.NextAt
		}
	}
	return out, nil
}

// ShowURL is a webhook URL as lists show it: without user credentials,
// query or fragment, where secrets go.
func ShowURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// logURL is a webhook URL as the daemon's log shows it: its scheme and
// host only, since some receivers (a chat's incoming webhook) keep their
// secret in the path.
func logURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	out := u.Scheme + "://" + u.Host
	if strings.Trim(u.Path, "/") != "" {
		out += "/…"
	}
	return out
}
