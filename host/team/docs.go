package team

import (
	"context"
	"errors"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/store"
)

// provider validates a document reference and finds its workflow's provider.
func (s *Service) provider(ctx context.Context, scope store.Scope, path string) (docprovider.Provider, store.Workflow, error) {
	if path != "" {
		if err := docprovider.ValidatePath(path); err != nil {
			return nil, store.Workflow{}, api.FromSDK(err)
		}
	}
	wf, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return nil, store.Workflow{}, err
	}
	p, err := s.docs(ctx, wf)
	if err != nil {
		return nil, store.Workflow{}, err
	}
	return p, wf, nil
}

// mayWrite enforces documentOwner: when a workflow names an owner, only that
// agent (and the human user, whose files these are) changes documents.
func mayWrite(wf store.Workflow, actor string) error {
	if wf.DocsOwner == "" || actor == wf.DocsOwner || actor == SenderUser {
		return nil
	}
	return api.Errorf(api.CodePermission, "only %s, the document owner of @%s:%s, can change documents: send your text to @%s instead", wf.DocsOwner, wf.Name, wf.Tag, wf.DocsOwner)
}

func ref(scope store.Scope, path string) docprovider.Ref {
	if path == "" {
		path = docprovider.DefaultDocument
	}
	return docprovider.Ref{Workflow: scope.Workflow, Tag: scope.Tag, Path: path}
}

// DocRead returns a document; the default document reads as empty before
// anyone writes it.
func (s *Service) DocRead(ctx context.Context, scope store.Scope, path string) (string, error) {
	p, _, err := s.provider(ctx, scope, path)
	if err != nil {
		return "", err
	}
	r := ref(scope, path)
	content, err := p.Read(ctx, r)
	if errors.Is(err, api.ErrNotFound) && r.Path == docprovider.DefaultDocument {
		return "", nil
	}
	return content, err
}

// DocWrite replaces a document.
func (s *Service) DocWrite(ctx context.Context, scope store.Scope, actor, path, content string) error {
	return s.docChange(ctx, scope, actor, path, &content, func(p docprovider.Provider, r docprovider.Ref) error {
		return p.Write(ctx, r, content)
	})
}

// DocAppend adds to the end of a document, creating it if needed.
func (s *Service) DocAppend(ctx context.Context, scope store.Scope, actor, path, content string) error {
	return s.docChange(ctx, scope, actor, path, nil, func(p docprovider.Provider, r docprovider.Ref) error {
		return p.Append(ctx, r, content)
	})
}

// DocCreate makes a new document and refuses to replace one.
func (s *Service) DocCreate(ctx context.Context, scope store.Scope, actor, path, content string) error {
	if path == "" {
		return api.Errorf(api.CodeInvalid, "file is required: name the new document, e.g. plan.md")
	}
	return s.docChange(ctx, scope, actor, path, &content, func(p docprovider.Provider, r docprovider.Ref) error {
		return p.Create(ctx, r, content)
	})
}

// docChange makes a change through the document's provider and indexes
// the result for search: whole is the document's content after the change
// when the change says it (a write, a create), nil when only the provider
// knows (an append).
func (s *Service) docChange(ctx context.Context, scope store.Scope, actor, path string, whole *string, do func(docprovider.Provider, docprovider.Ref) error) error {
	p, wf, err := s.provider(ctx, scope, path)
	if err != nil {
		return err
	}
	if err := mayWrite(wf, actor); err != nil {
		return err
	}
	r := ref(scope, path)
	if err := do(p, r); err != nil {
		return err
	}
	s.indexDocument(ctx, p, r, whole)
	return nil
}

// DocList returns every document of scope.
func (s *Service) DocList(ctx context.Context, scope store.Scope) ([]docprovider.Info, error) {
	p, _, err := s.provider(ctx, scope, "")
	if err != nil {
		return nil, err
	}
	return p.List(ctx, docprovider.Scope{Workflow: scope.Workflow, Tag: scope.Tag})
}
