package team

import (
	"context"
	"errors"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/store"
)

// Search finds query in a workflow:tag's messages, documents and run
// transcripts as viewer may see them: an agent finds the direct messages
// it sent or received and its own runs; "" is the owner, who finds
// everything. kind is "", message, doc or run; limit 0 means 20.
func (s *Service) Search(ctx context.Context, scope store.Scope, viewer, query, kind string, limit int) ([]store.SearchHit, error) {
	if _, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag); err != nil {
		return nil, err
	}
	if viewer != "" {
		if _, err := s.db.GetAgent(ctx, store.AgentKey{Name: viewer, Workflow: scope.Workflow, Tag: scope.Tag}); err != nil {
			return nil, err
		}
	}
	return s.db.Search(ctx, scope, store.SearchOptions{Query: query, Kind: kind, Limit: limit, Viewer: viewer})
}

// indexDocument records a document's current content for search after a
// write through the daemon. Documents live with their provider, so the
// index cannot share the provider's write: it is updated right after,
// from whole when the change said what the document now holds, else from
// what the provider holds (an append is indexed whole). A failure is
// logged, not returned: the write itself succeeded.
func (s *Service) indexDocument(ctx context.Context, p docprovider.Provider, r docprovider.Ref, whole *string) {
	var content string
	var err error
	if whole != nil {
		content = *whole
	} else if content, err = p.Read(ctx, r); errors.Is(err, api.ErrNotFound) {
		content, err = "", nil
	}
	if err == nil {
		err = s.db.IndexDocument(ctx, store.Scope{Workflow: r.Workflow, Tag: r.Tag}, r.Path, content)
	}
	if err != nil {
		s.log.Warn("index document for search", "workflow", r.Workflow, "tag", r.Tag, "path", r.Path, "error", err)
	}
}
