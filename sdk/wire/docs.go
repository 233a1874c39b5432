package wire

import (
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/internal/pbtime"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// The pure conversions between the provider's Go types and the wire
// messages of protocol v1; docs_test.go checks nil, zero and full values.

func RefToProto(r docprovider.Ref) *pluginv1.DocumentRef {
	return &pluginv1.DocumentRef{Workflow: r.Workflow, Tag: r.Tag, Path: r.Path}
}

func RefFromProto(r *pluginv1.DocumentRef) docprovider.Ref {
	return docprovider.Ref{Workflow: r.GetWorkflow(), Tag: r.GetTag(), Path: r.GetPath()}
}

func ScopeToProto(s docprovider.Scope) *pluginv1.ListRequest {
	return &pluginv1.ListRequest{Workflow: s.Workflow, Tag: s.Tag}
}

func ScopeFromProto(r *pluginv1.ListRequest) docprovider.Scope {
	return docprovider.Scope{Workflow: r.GetWorkflow(), Tag: r.GetTag()}
}

func InfosToProto(infos []docprovider.Info) *pluginv1.ListResponse {
	out := &pluginv1.ListResponse{Documents: make([]*pluginv1.DocumentInfo, len(infos))}
	for i, in := range infos {
		out.Documents[i] = &pluginv1.DocumentInfo{Path: in.Path, Size: in.Size, UpdatedAt: pbtime.ToProto(in.UpdatedAt)}
	}
	return out
}

// InfosFromProto always returns a non-nil slice: Provider.List promises an
// empty one for an empty scope, and the wire cannot tell nil from empty.
func InfosFromProto(r *pluginv1.ListResponse) []docprovider.Info {
	out := make([]docprovider.Info, len(r.GetDocuments()))
	for i, in := range r.GetDocuments() {
		out[i] = docprovider.Info{Path: in.GetPath(), Size: in.GetSize(), UpdatedAt: pbtime.FromProto(in.GetUpdatedAt())}
	}
	return out
}
