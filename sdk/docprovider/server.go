package docprovider

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/internal/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// server serves a plugin's Provider; every error leaves as a gRPC status
// that keeps its class and exact text (grpcerr.ToGRPC).
type server struct {
	pluginv1.UnimplementedDocumentProviderServiceServer
	impl Provider
}

func toGRPC(err error) error { return grpcerr.ToGRPC(err, false) }

// Read serves Provider.Read.
func (s *server) Read(ctx context.Context, req *pluginv1.ReadRequest) (*pluginv1.ReadResponse, error) {
	content, err := s.impl.Read(ctx, refFromProto(req.GetRef()))
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.ReadResponse{Content: content}, nil
}

// Write serves Provider.Write.
func (s *server) Write(ctx context.Context, req *pluginv1.WriteRequest) (*pluginv1.WriteResponse, error) {
	if err := s.impl.Write(ctx, refFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.WriteResponse{}, nil
}

// Append serves Provider.Append.
func (s *server) Append(ctx context.Context, req *pluginv1.AppendRequest) (*pluginv1.AppendResponse, error) {
	if err := s.impl.Append(ctx, refFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.AppendResponse{}, nil
}

// Create serves Provider.Create.
func (s *server) Create(ctx context.Context, req *pluginv1.CreateRequest) (*pluginv1.CreateResponse, error) {
	if err := s.impl.Create(ctx, refFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.CreateResponse{}, nil
}

// List serves Provider.List.
func (s *server) List(ctx context.Context, req *pluginv1.ListRequest) (*pluginv1.ListResponse, error) {
	infos, err := s.impl.List(ctx, scopeFromProto(req))
	if err != nil {
		return nil, toGRPC(err)
	}
	return infosToProto(infos), nil
}
