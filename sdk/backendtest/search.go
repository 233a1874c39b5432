package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// addSearchTools registers the fake of team_search: a case-insensitive
// substring match of every word of the query in the messages the caller
// sees and the documents, newest message first, documents by name. It
// neither stems nor ranks, and transcripts are not kept.
func (d *Daemon) addSearchTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.TeamSearch, func(in tools.SearchArgs) (tools.SearchResult, string, error) {
		words := strings.Fields(strings.ToLower(strings.NewReplacer(`"`, " ", "*", " ").Replace(in.Query)))
		if len(words) == 0 {
			return tools.SearchResult{}, "", errors.New("search query is empty: give words, \"a phrase\" or a prefix*")
		}
		matches := func(text string) bool {
			text = strings.ToLower(text)
			for _, w := range words {
				if !strings.Contains(text, w) {
					return false
				}
			}
			return true
		}
		out := tools.SearchResult{Hits: []tools.SearchHit{}}
		if in.Kind == "" || in.Kind == "message" {
			for _, m := range slices.Backward(d.messages) {
				if visible(m, me) && matches(m.Content) {
					out.Hits = append(out.Hits, tools.SearchHit{Kind: "message", Seq: m.Seq, From: m.From, To: m.To, Snippet: m.Content, At: m.CreatedAt})
				}
			}
		}
		if in.Kind == "" || in.Kind == "doc" {
			for _, file := range slices.Sorted(func(yield func(string) bool) {
				for f := range d.contents {
					if !yield(f) {
						return
					}
				}
			}) {
				if matches(d.contents[file]) {
					out.Hits = append(out.Hits, tools.SearchHit{Kind: "doc", File: file, Snippet: d.contents[file]})
				}
			}
		}
		if limit := in.Limit; limit > 0 && len(out.Hits) > limit {
			out.Hits = out.Hits[:limit]
		}
		out.Count = len(out.Hits)
		return out, fmt.Sprintf("found %d", out.Count), nil
	})
}
