package console

import (
	"errors"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// searchShown is the number of hits on a team's search page.
const searchShown = 50

// searchRow is one hit on the search page: what it is, its snippet with
// the hits marked, and where to open it.
type searchRow struct {
	api.SearchHit
	Marked template.HTML
	Open   string
}

// search is a team's search page: the owner's search of its messages,
// documents and run transcripts. A malformed query is shown on the page
// with what is wrong with it, beside the box to correct it.
func (v *views) search(w http.ResponseWriter, r *http.Request, ss session) error {
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	query, kind := strings.TrimSpace(q.Get("q")), q.Get("kind")
	data := map[string]any{"Target": t, "Query": query, "Kind": kind}
	if query != "" {
		res, err := v.api.Search(r.Context(), t, api.SearchQuery{Query: query, Kind: kind, Limit: searchShown})
		switch {
		case api.ErrorCode(err) == api.CodeInvalid:
			data["Error"] = errorMessage(err)
		case err != nil:
			return err
		default:
			rows := make([]searchRow, 0, len(res.Hits))
			for _, h := range res.Hits {
				rows = append(rows, searchRow{SearchHit: h, Marked: markHits(h.Snippet), Open: hitURL(t, h)})
			}
			data["Hits"] = rows
		}
	}
	return v.s.pages().render(w, r, "search", ss, "Search "+t.Display(), data)
}

// errorMessage is an API error's message without its code.
func errorMessage(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// markHits is a snippet as HTML: escaped, with each «hit» in <mark>. A
// stray mark of the text itself never leaves a tag open.
func markHits(snippet string) template.HTML {
	var b strings.Builder
	open := false
	for {
		i := strings.IndexAny(snippet, "«»")
		if i < 0 {
			break
		}
		b.WriteString(html.EscapeString(snippet[:i]))
		start := strings.HasPrefix(snippet[i:], "«")
		switch {
		case start && !open:
			b.WriteString("<mark>")
			open = true
		case !start && open:
			b.WriteString("</mark>")
			open = false
		default:
			b.WriteString(html.EscapeString(snippet[i : i+len("«")]))
		}
		snippet = snippet[i+len("«"):]
	}
	b.WriteString(html.EscapeString(snippet))
	if open {
		b.WriteString("</mark>")
	}
	return template.HTML(b.String())
}

// hitURL opens a hit: a message in the team's channel (shown from it if
// it is older than the page's last messages), a document, a run's
// transcript at the event.
func hitURL(t api.Target, h api.SearchHit) string {
	switch h.Kind {
	case "doc":
		return "/console/docs/" + url.PathEscape(t.Workflow) + "/" + url.PathEscape(t.Tag) + "/" + escapePath(h.Path)
	case "run":
		return "/console/runs/" + url.PathEscape(h.RunID) + "#e" + strconv.Itoa(h.Event)
	}
	seq := strconv.FormatInt(h.Seq, 10)
	return teamPath(t) + "?at=" + seq + "#m" + seq
}
