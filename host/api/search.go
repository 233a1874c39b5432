package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// SearchQuery is what a search asks: the query text, an optional kind
// (message, doc or run), a page size (0: the daemon's default of 20) and,
// for an agent's view, the agent (As) whose visibility applies.
type SearchQuery struct {
	Query string
	Kind  string
	Limit int
	As    string
}

// Search is GET /search/{wf}/{tag}?q=…: scope's messages, documents and
// run transcripts, as the owner sees them or as q.As does.
func (c *Client) Search(ctx context.Context, scope Target, q SearchQuery) (SearchResult, error) {
	v := url.Values{"q": {q.Query}}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.As != "" {
		v.Set("as", q.As)
	}
	var out SearchResult
	path := "/search/" + url.PathEscape(scope.Workflow) + "/" + url.PathEscape(scope.Tag) + "?" + v.Encode()
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}
