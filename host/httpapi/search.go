package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// handleSearch is GET /search/{wf}/{tag}?q=…[&kind=][&limit=][&as=agent]:
// the owner's search of a team, or, with as, what that agent may find.
// A malformed query is a 400 that says what is wrong with it.
func (h *Server) handleSearch(w http.ResponseWriter, r *http.Request) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 0)
	if err != nil {
		return err
	}
	as := q.Get("as")
	if as != "" {
		if _, err := api.ParseTarget(as); err != nil {
			return err
		}
	}
	hits, err := h.team.Search(r.Context(), scope, as, q.Get("q"), q.Get("kind"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.SearchResult{Query: q.Get("q"), Hits: APISearchHits(hits)})
	return nil
}

// APISearchHits is the wire form of search hits, shared with the MCP tool.
func APISearchHits(hits []store.SearchHit) []api.SearchHit {
	out := make([]api.SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, api.SearchHit{Kind: h.Kind, Workflow: h.Workflow, Tag: h.Tag, Seq: h.Seq, Sender: h.Sender,
			To: h.To, Path: h.Path, RunID: h.RunID, Agent: h.Agent, Event: h.Event, Snippet: h.Snippet, Score: h.Score, At: h.At})
	}
	return out
}
