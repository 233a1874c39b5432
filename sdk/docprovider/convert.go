package docprovider

import (
	"github.com/agent-worker/agent-worker/sdk/internal/pbtime"
	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// The pure conversions between the provider's Go types and the wire
// messages of protocol v1; convert_test.go checks nil, zero and full values.

func refToProto(r Ref) *pluginv1.DocumentRef {
	return &pluginv1.DocumentRef{Workflow: r.Workflow, Tag: r.Tag, Path: r.Path}
}

func refFromProto(r *pluginv1.DocumentRef) Ref {
	return Ref{Workflow: r.GetWorkflow(), Tag: r.GetTag(), Path: r.GetPath()}
}

func scopeToProto(s Scope) *pluginv1.ListRequest {
	return &pluginv1.ListRequest{Workflow: s.Workflow, Tag: s.Tag}
}

func scopeFromProto(r *pluginv1.ListRequest) Scope {
	return Scope{Workflow: r.GetWorkflow(), Tag: r.GetTag()}
}

func infosToProto(infos []Info) *pluginv1.ListResponse {
	out := &pluginv1.ListResponse{Documents: make([]*pluginv1.DocumentInfo, len(infos))}
	for i, in := range infos {
		out.Documents[i] = &pluginv1.DocumentInfo{Path: in.Path, Size: in.Size, UpdatedAt: pbtime.ToProto(in.UpdatedAt)}
	}
	return out
}

// infosFromProto always returns a non-nil slice: Provider.List promises an
// empty one for an empty scope, and the wire cannot tell nil from empty.
func infosFromProto(r *pluginv1.ListResponse) []Info {
	out := make([]Info, len(r.GetDocuments()))
	for i, in := range r.GetDocuments() {
		out[i] = Info{Path: in.GetPath(), Size: in.GetSize(), UpdatedAt: pbtime.FromProto(in.GetUpdatedAt())}
	}
	return out
}
