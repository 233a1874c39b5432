package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// addSearchTools registers team_search: the full-text search of the
// agent's team, as the agent may see it (its own direct messages and runs,
// every channel message and document).
func (s *Server) addSearchTools(srv *mcp.Server, me store.AgentKey) {
	tool(s, srv, me, tools.TeamSearch,
		`Search your team's channel messages, shared documents and your own runs' transcripts, best matches first. Words must all match and are stemmed ("migrating" finds "migration"); use "double quotes" for an exact phrase and word* for a prefix. Each hit says how to open it.`,
		func(ctx context.Context, in tools.SearchArgs) (tools.SearchResult, string, error) {
			hits, err := s.svc.Search(ctx, me.Scope(), me.Name, in.Query, in.Kind, in.Limit)
			if err != nil {
				return tools.SearchResult{}, "", err
			}
			out := tools.SearchResult{Hits: []tools.SearchHit{}, Count: len(hits)}
			lines := []string{}
			for _, h := range hits {
				th := h.Tool()
				out.Hits = append(out.Hits, th)
				lines = append(lines, searchLine(th))
			}
			if len(lines) == 0 {
				return out, "no matches", nil
			}
			return out, strings.Join(lines, "\n"), nil
		})
}

// searchLine is one hit as the agent reads it: what it is, the snippet,
// and the tool call that opens it.
func searchLine(h tools.SearchHit) string {
	snippet := strings.Join(strings.Fields(h.Snippet), " ")
	switch h.Kind {
	case store.SearchDoc:
		return fmt.Sprintf("document %s: %s (team_doc_read file=%q)", h.File, snippet, h.File)
	case store.SearchRun:
		return fmt.Sprintf("your run %s, event %d: %s", h.RunID, h.Event, snippet)
	}
	dm := ""
	if h.To != "" {
		dm = " (direct to " + h.To + ")"
	}
	return fmt.Sprintf("#%d %s%s: %s (channel_read since_seq=%d)", h.Seq, h.From, dm, snippet, max(h.Seq-1, 0))
}
