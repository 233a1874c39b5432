package api

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ConsoleLogin is the body of POST /console/codes: a one-time login link
// to the web console. It works once, until ExpiresAt.
type ConsoleLogin struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ConsoleLogin is POST /console/codes.
func (c *Client) ConsoleLogin(ctx context.Context) (ConsoleLogin, error) {
	var l ConsoleLogin
	return l, c.do(ctx, http.MethodPost, "/console/codes", nil, &l)
}

// Resource is the body of GET /resources/{wf}/{tag}/{id}: long content an
// agent passed by reference (a long message's full text, tool output).
type Resource struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// Resource is GET /resources/{wf}/{tag}/{id}.
func (c *Client) Resource(ctx context.Context, scope Target, id string) (Resource, error) {
	var r Resource
	return r, c.do(ctx, http.MethodGet, "/resources/"+url.PathEscape(scope.Workflow)+"/"+url.PathEscape(scope.Tag)+"/"+url.PathEscape(id), nil, &r)
}
