package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

// Notifications is the notification outbox (host/notify.Notifier).
type Notifications interface {
	// List returns the newest deliveries, only failed ones with failed.
	List(ctx context.Context, failed bool) ([]api.Notification, error)
	// TestEvent sends a test to scope's webhooks, returning the delivery
	// ids.
	TestEvent(ctx context.Context, scope store.Scope) ([]string, error)
}

// handleNotifications is GET /notifications?failed=1: the outbox, newest
// first.
func (h *Server) handleNotifications(w http.ResponseWriter, r *http.Request) error {
	if h.notify == nil {
		return api.Errorf(api.CodeUnavailable, "this daemon sends no notifications")
	}
	f := r.URL.Query().Get("failed")
	ns, err := h.notify.List(r.Context(), f == "1" || f == "true")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NotificationList{Notifications: ns})
	return nil
}

// handleNotifyTest is POST /notify/test/{wf}/{tag}: a test event to the
// workflow's notify: webhooks.
func (h *Server) handleNotifyTest(w http.ResponseWriter, r *http.Request) error {
	if h.notify == nil {
		return api.Errorf(api.CodeUnavailable, "this daemon sends no notifications")
	}
	t, err := api.ParseTarget("@" + r.PathValue("wf") + ":" + r.PathValue("tag"))
	if err != nil {
		return err
	}
	ids, err := h.notify.TestEvent(r.Context(), scopeOf(t))
	if err != nil {
		if api.ErrorCode(err) == api.CodeNotFound {
			return api.Errorf(api.CodeNotFound, "no workflow %s: `agent-worker status` lists the workflows there are", t.Display())
		}
		return err
	}
	writeJSON(w, http.StatusAccepted, contract.NotifyTestResult{Workflow: t.Workflow, Tag: t.Tag, Deliveries: ids})
	return nil
}
