package mcpserver

import (
	"context"
	"fmt"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// RunContext is what me's run would read first through the tools, read
// the way the tools read it, for the daemon to send with the run request:
// my_inbox for the inbox page the run is shown (inbox, as the scheduler
// read it, up to until), channel_read of the latest tools.RecentLimit
// messages, team_doc_read of notes.md and team_doc_list.
func (s *Server) RunContext(ctx context.Context, me store.AgentKey, inbox []store.Message, until int64) (tools.RunContext, error) {
	scope := me.Scope()
	recent, err := s.svc.Read(ctx, scope, me.Name, 0, tools.RecentLimit)
	if err != nil {
		return tools.RunContext{}, fmt.Errorf("read the channel: %w", err)
	}
	notes, err := s.svc.DocRead(ctx, scope, "")
	if err != nil {
		return tools.RunContext{}, fmt.Errorf("read notes.md: %w", err)
	}
	docs, err := s.docList(ctx, scope)
	if err != nil {
		return tools.RunContext{}, fmt.Errorf("list documents: %w", err)
	}
	var effort *tools.EffortContext
	if s.Efforts != nil {
		// A run with an active effort picks it up at its phase.
		if effort, err = s.Efforts.RunContext(ctx, me); err != nil {
			return tools.RunContext{}, fmt.Errorf("effort: %w", err)
		}
	}
	return tools.RunContext{Inbox: inboxResult(shownUntil(inbox, until)), Recent: team.APIMessages(recent),
		Notes: notes, Documents: docs.Documents, Effort: effort}, nil
}
