package triggers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// ReportEvent is the outbox event of a report: `notifications` lists a
// report's delivery under it.
const ReportEvent = "report"

// armed is a report as one delivery made it: where it goes, with the
// body's project and merge request (or repository and number) filled in,
// and what it posts. It is the store's PendingReport.Report.
type armed struct {
	To       workflow.ReportTo `json:"to"`
	URL      string            `json:"url"`
	TokenEnv string            `json:"token_env"`
	Agent    string            `json:"agent,omitempty"`
	Document string            `json:"document,omitempty"`
}

// arm makes the report of t for a delivery of body, "" when t reports
// nothing or the body lacks where to post it (missing names what it
// lacked: the message is posted all the same, without a report).
func (s *Service) arm(t store.Trigger, body []byte, log hclog.Logger) (report string, missing []string, err error) {
	if t.Report == "" {
		return "", nil, nil
	}
	var r workflow.Report
	if err := json.Unmarshal([]byte(t.Report), &r); err != nil {
		return "", nil, fmt.Errorf("webhook %q: its stored report: %w", t.Name, err)
	}
	u, missing, err := r.URL(body)
	if err != nil {
		return "", nil, api.Errorf(api.CodeInvalid, "webhook %q report: %w; nothing was posted", t.Name, err)
	}
	doc, m, err := workflow.RenderTrigger(r.Document, body)
	if err != nil {
		return "", nil, api.Errorf(api.CodeInvalid, "webhook %q report: %w; nothing was posted", t.Name, err)
	}
	if missing = append(missing, m...); len(missing) > 0 {
		log.Warn("webhook report: the body lacks where to post it or what; the message is posted without a report", "missing", missing)
		return "", missing, nil
	}
	b, err := json.Marshal(armed{To: r.To, URL: u, TokenEnv: r.TokenEnv, Agent: r.Agent, Document: doc})
	return string(b), nil, err
}

// Pending reports whether scope has reports waiting for its team to go
// idle: the idle watch looks at such a team even when no notify:
// webhook listens to it.
func (s *Service) Pending(ctx context.Context, scope store.Scope) bool {
	rs, err := s.db.PendingReports(ctx, scope)
	return err == nil && len(rs) > 0
}

// Fire posts scope's pending reports, its team being idle: each moves
// into the notification outbox (retried there, listed by
// `notifications`) once, however often Fire runs and on whichever
// member. A report that cannot be made is logged; it never fails the
// team.
func (s *Service) Fire(ctx context.Context, scope store.Scope) {
	rs, err := s.db.PendingReports(ctx, scope)
	if err != nil {
		s.log.Warn("read pending reports", "workflow", scope.String(), "error", err)
		return
	}
	queued := false
	for _, p := range rs {
		log := s.log.With("workflow", scope.String(), "webhook", p.Trigger, "delivery", p.DeliveryID, "report", p.ID)
		var a armed
		if err := json.Unmarshal([]byte(p.Report), &a); err != nil {
			log.Error("a pending report does not read", "error", err)
			continue
		}
		body, err := json.Marshal(map[string]string{"body": s.result(ctx, scope, p, a)})
		if err != nil {
			continue
		}
		auth := store.AuthGitLab
		if a.To == workflow.ReportGitHub {
			auth = store.AuthGitHub
		}
		d, fired, err := s.db.FireReport(ctx, p.ID, store.NotifyDelivery{Event: ReportEvent, Workflow: scope.Workflow, Tag: scope.Tag,
			URL: a.URL, Body: string(body), SecretEnv: a.TokenEnv, Auth: auth})
		switch {
		case err != nil:
			log.Warn("queue a report", "error", err)
		case fired:
			queued = true
			log.Info("report queued", "notification", d.ID, "to", string(a.To))
		}
	}
	if queued && s.wake != nil {
		s.wake()
	}
}

// result is what a report posts: the agent's last message since the
// delivery, or the document; a line saying so when there is none.
func (s *Service) result(ctx context.Context, scope store.Scope, p store.PendingReport, a armed) string {
	target := api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
	if a.Agent != "" {
		m, found, err := s.db.LastMessageFrom(ctx, scope, a.Agent, p.Seq)
		switch {
		case err != nil:
			return fmt.Sprintf("agent-worker: the last message of %s in %s could not be read: %v", a.Agent, target, err)
		case !found || strings.TrimSpace(m.Content) == "":
			return fmt.Sprintf("agent-worker: %s in %s finished without writing a message after this event", a.Agent, target)
		}
		return m.Content
	}
	text, err := s.team.DocRead(ctx, scope, a.Document)
	switch {
	case api.ErrorCode(err) == api.CodeNotFound:
		return fmt.Sprintf("agent-worker: the team of %s finished without writing the document %s", target, a.Document)
	case err != nil:
		return fmt.Sprintf("agent-worker: the document %s of %s could not be read: %v", a.Document, target, err)
	}
	return text
}
