package triggers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Config wires a Service.
type Config struct {
	DB   *store.DB
	Team *team.Service
	// LookupEnv reads the daemon's environment, where secrets live;
	// nil is os.LookupEnv. Tests give each daemon its own.
	LookupEnv func(string) (string, bool)
	// Wake nudges the notification outbox when a report is queued; nil
	// leaves it to find it on its own.
	Wake func()
	Log  hclog.Logger
	// Tracing gives each delivery that posts its invoke_workflow span, the
	// root of the trace of the runs it wakes (nil: no spans).
	Tracing *telemetry.Telemetry
}

// Service checks and serves webhook deliveries. It keeps no state: the
// triggers are in the store, written when a workflow loads.
type Service struct {
	db     *store.DB
	team   *team.Service
	lookup func(string) (string, bool)
	wake   func()
	log    hclog.Logger
	tracer trace.Tracer
}

// New returns a Service over cfg.
func New(cfg Config) *Service {
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Service{db: cfg.DB, team: cfg.Team, lookup: cfg.LookupEnv, wake: cfg.Wake, log: cfg.Log, tracer: cfg.Tracing.Tracer()}
}

// secret is the trigger's secret, or "" when its variable is unset or
// empty: an empty key would make every signature trivial to forge.
func (s *Service) secret(env string) string {
	v, _ := s.lookup(env)
	return v
}

// Check refuses triggers whose secret_env is not set in the daemon's
// environment, naming path:line of each, so the workflow does not start
// (or an edit is rejected) rather than serve a webhook it cannot verify.
func (s *Service) Check(path string, ts []workflow.Trigger) error {
	var bad []string
	for _, t := range ts {
		if s.secret(t.SecretEnv) == "" {
			bad = append(bad, fmt.Sprintf("%s:%d: webhook %s: secret_env %s is not set in the daemon's environment: "+
				"set it to the webhook's secret and restart the daemon (`agent-worker stop --all`, then any command starts it)", path, t.Line, t.Name, t.SecretEnv))
		}
		if r := t.Report; r != nil && s.secret(r.TokenEnv) == "" {
			bad = append(bad, fmt.Sprintf("%s:%d: webhook %s: report token_env %s is not set in the daemon's environment: "+
				"set it to a %s API token that may comment and restart the daemon (`agent-worker stop --all`, then any command starts it)", path, r.Line, t.Name, r.TokenEnv, r.To))
		}
	}
	if bad != nil {
		return api.Errorf(api.CodeInvalid, "%s", strings.Join(bad, "\n"))
	}
	return nil
}

// Delivery is one webhook request as the HTTP layer received it.
type Delivery struct {
	Workflow, Tag, Trigger string
	// Header is the request's: the signature or token, the event and the
	// delivery id, each where the trigger's provider puts it.
	Header http.Header
	Body   []byte
}

// deliveryID is the sender's id of d, "" when it sent none: GitLab's
// X-Gitlab-Event-UUID, GitHub's X-GitHub-Delivery, and for any other
// sender either that or X-Request-Id.
func deliveryID(p workflow.HookProvider, h http.Header) string {
	switch p {
	case workflow.ProviderGitLab:
		return h.Get(api.HeaderGitLabEventUUID)
	case workflow.ProviderGitHub:
		return h.Get(api.HeaderDelivery)
	}
	if id := h.Get(api.HeaderDelivery); id != "" {
		return id
	}
	return h.Get(api.HeaderRequestID)
}

// eventHeader is the header that names a delivery's event for p.
func eventHeader(p workflow.HookProvider) string {
	if p == workflow.ProviderGitLab {
		return api.HeaderGitLabEvent
	}
	return api.HeaderGitHubEvent
}

// Deliver posts the trigger's message for d. In order: the workflow and
// its trigger must exist (not found), the trigger's secret must be set
// (unavailable: the daemon will not take unsigned requests), the
// signature (hmac, github) or token (gitlab) must match (unauthorized),
// an event the trigger's events: leave out is acknowledged and nothing
// more, then the message is rendered and posted, and the trigger's report
// armed, unless the delivery's id was delivered within
// store.DeliveryMemory. Nothing is posted on any error.
func (s *Service) Deliver(ctx context.Context, d Delivery) (api.HookResult, error) {
	res := api.HookResult{Workflow: d.Workflow, Tag: d.Tag, Trigger: d.Trigger}
	scope := store.Scope{Workflow: d.Workflow, Tag: d.Tag}
	// The caller is not authenticated yet: a miss tells it nothing of
	// which workflows and webhooks exist; the daemon's log says why.
	notFound := func(why string) (api.HookResult, error) {
		s.log.Info("webhook delivery to no webhook", "workflow", scope.String(), "webhook", d.Trigger, "why", why)
		return res, api.Errorf(api.CodeNotFound, "no such webhook")
	}
	wf, err := s.db.GetWorkflow(ctx, d.Workflow, d.Tag)
	if api.ErrorCode(err) == api.CodeNotFound {
		return notFound("no such workflow")
	}
	if err != nil {
		return res, err
	}
	ts, err := s.db.ListTriggers(ctx, scope)
	if err != nil {
		return res, err
	}
	t, ok := find(ts, d.Trigger)
	if !ok {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		return notFound("its webhooks are: " + strings.Join(names, ", "))
	}
	provider := workflow.HookProvider(t.Provider)
	if provider == "" {
		provider = workflow.ProviderHMAC
	}
	id := deliveryID(provider, d.Header)
	res.Delivery = id
	log := s.log.With("workflow", scope.String(), "webhook", t.Name, "delivery", id)
	secret := s.secret(t.SecretEnv)
	if secret == "" {
		log.Error("webhook refused: its secret_env is not set in the daemon's environment; set it and restart the daemon", "secret_env", t.SecretEnv)
		return res, api.Errorf(api.CodeUnavailable, "webhook %q of %s cannot check signatures: the daemon's environment lacks its secret (see the daemon's log); nothing was posted", t.Name, scope)
	}
	if err := check(provider, secret, d.Header, d.Body); err != nil {
		log.Warn("webhook refused", "error", err)
		return res, err
	}
	if provider != workflow.ProviderHMAC {
		res.Event = workflow.EventName(provider, d.Header.Get(eventHeader(provider)), d.Body)
		if !workflow.MatchEvent(t.Events, res.Event) {
			res.Ignored = fmt.Sprintf("event %q is not one webhook %q takes (events: %s): nothing was posted", res.Event, t.Name, strings.Join(t.Events, ", "))
			log.Info("webhook event not taken", "event", res.Event)
			return res, nil
		}
	}
	if wf.State == api.WorkflowStopped {
		return res, api.Errorf(api.CodeConflict, "workflow %s is stopped: start it again to receive webhook %q; nothing was posted", scope, t.Name)
	}
	text, missing, err := workflow.RenderTrigger(t.Message, d.Body)
	if err != nil {
		return res, api.Errorf(api.CodeInvalid, "webhook %q: %w; nothing was posted", t.Name, err)
	}
	if len(missing) > 0 {
		log.Warn("webhook message: the body lacks these paths; they were posted empty", "missing", missing)
		res.Missing = missing
	}
	// The delivery's span is the root of the trace of the runs its
	// message wakes, as a kickoff's is: composed under it, the message
	// carries it.
	ctx, span := telemetry.Workflow(ctx, s.tracer, d.Workflow, d.Tag, "webhook")
	defer span.End()
	span.SetAttributes(telemetry.WebhookKey.String(t.Name), telemetry.DeliveryKey.String(id))
	m, err := s.team.Compose(ctx, team.SendRequest{Scope: scope, From: team.SenderSystem, Content: text})
	if err != nil {
		return res, fmt.Errorf("webhook %q: %w", t.Name, err)
	}
	report, missing, err := s.arm(t, d.Body, log)
	if err != nil {
		return res, err
	}
	res.Missing = append(res.Missing, missing...)
	msg, dup, err := s.db.PostDelivery(ctx, store.Delivery{Workflow: d.Workflow, Tag: d.Tag, Trigger: t.Name, ID: id, Report: report}, m)
	if err != nil {
		return res, err
	}
	res.Duplicate, res.Seq, res.MessageID = dup, msg.Seq, msg.ID
	if dup {
		log.Info("webhook delivered again; already posted", "seq", msg.Seq)
		return res, nil
	}
	if report != "" {
		res.Report = "armed"
	}
	s.team.Announce(msg)
	log.Info("webhook posted", "seq", msg.Seq, "report", report != "")
	return res, nil
}

// check proves a delivery comes from the trigger's sender: GitLab sends
// the secret itself in X-Gitlab-Token; the others sign the body.
func check(p workflow.HookProvider, secret string, h http.Header, body []byte) error {
	if p == workflow.ProviderGitLab {
		return verifyToken(secret, h.Get(api.HeaderGitLabToken))
	}
	return verify(secret, h.Get(api.HeaderSignature), body)
}

// verifyToken compares GitLab's X-Gitlab-Token with the secret in
// constant time (of the hashes, so the length is not told either).
func verifyToken(secret, token string) error {
	if token == "" {
		return api.Errorf(api.CodeUnauthorized, "missing %s header: set the GitLab webhook's secret token to the trigger's secret; nothing was posted", api.HeaderGitLabToken)
	}
	a, b := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return api.Errorf(api.CodeUnauthorized, "%s does not match: check that the GitLab webhook's secret token is the daemon's secret; nothing was posted", api.HeaderGitLabToken)
	}
	return nil
}

func find(ts []store.Trigger, name string) (store.Trigger, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return store.Trigger{}, false
}

// verify checks header ("sha256=<hex>") against the HMAC-SHA256 of body
// keyed with secret, in constant time.
func verify(secret, header string, body []byte) error {
	if header == "" {
		return api.Errorf(api.CodeUnauthorized, "missing %s header: sign the body with HMAC-SHA256 and the webhook's secret (GitHub does when the webhook has a secret); nothing was posted", api.HeaderSignature)
	}
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	got, err := hex.DecodeString(hexSum)
	if !ok || err != nil {
		return api.Errorf(api.CodeUnauthorized, "%s must be sha256= and the hex HMAC-SHA256 of the body; nothing was posted", api.HeaderSignature)
	}
	if !hmac.Equal(got, sum(secret, body)) {
		return api.Errorf(api.CodeUnauthorized, "%s does not match the body: check that the sender uses the same secret as the daemon; nothing was posted", api.HeaderSignature)
	}
	return nil
}

// Sign returns the X-Hub-Signature-256 value of body under secret, as a
// sender computes it; tests and scripts that call webhooks use it.
func Sign(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(sum(secret, body))
}

func sum(secret string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}
