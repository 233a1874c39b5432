package api

import (
	"context"
	"net/http"
	"net/url"
)

// ConsoleLogin is POST /console/codes.
func (c *Client) ConsoleLogin(ctx context.Context) (ConsoleLogin, error) {
	var l ConsoleLogin
	return l, c.do(ctx, http.MethodPost, "/console/codes", nil, &l)
}

// Resource is GET /resources/{wf}/{tag}/{id}.
func (c *Client) Resource(ctx context.Context, scope Target, id string) (Resource, error) {
	var r Resource
	return r, c.do(ctx, http.MethodGet, "/resources/"+url.PathEscape(scope.Workflow)+"/"+url.PathEscape(scope.Tag)+"/"+url.PathEscape(id), nil, &r)
}
