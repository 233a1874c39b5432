package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Notifications is GET /notifications: the newest deliveries, only the
// failed ones with failed.
func (c *Client) Notifications(ctx context.Context, failed bool) ([]Notification, error) {
	path := "/notifications"
	if failed {
		path += "?failed=1"
	}
	var l NotificationList
	return l.Notifications, c.do(ctx, http.MethodGet, path, nil, &l)
}

// NotifyTest is POST /notify/test/{wf}/{tag}.
func (c *Client) NotifyTest(ctx context.Context, workflow, tag string) (contract.NotifyTestResult, error) {
	var out contract.NotifyTestResult
	return out, c.do(ctx, http.MethodPost, "/notify/test/"+url.PathEscape(workflow)+"/"+url.PathEscape(tag), nil, &out)
}
