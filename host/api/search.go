package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SearchHit is one thing a search found, best first. Kind says which of
// the naming fields are set: a message has Seq, Sender (and To for a
// direct message); a document has Path; a transcript line has RunID,
// Agent and Event.
type SearchHit struct {
	Kind     string `json:"kind"` // message, doc or run
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	Seq      int64  `json:"seq,omitempty"`
	Sender   string `json:"sender,omitempty"`
	To       string `json:"to,omitempty"`
	Path     string `json:"path,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Event    int    `json:"event,omitempty"`
	// Snippet is the text around the hits, each hit marked «like this».
	Snippet string    `json:"snippet"`
	Score   float64   `json:"score"`
	At      time.Time `json:"at"`
}

// SearchResult is GET /search/{wf}/{tag}.
type SearchResult struct {
	Query string      `json:"query"`
	Hits  []SearchHit `json:"hits"`
}

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
