package grpcplugin

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// docsServer serves a plugin's Provider; every error leaves as a gRPC status
// that keeps its class and exact text (grpcerr.ToGRPC).
type docsServer struct {
	pluginv1.UnimplementedDocumentProviderServiceServer
	impl docprovider.Provider
}

func toGRPC(err error) error { return grpcerr.ToGRPC(err, false) }

// Read serves Provider.Read.
func (s *docsServer) Read(ctx context.Context, req *pluginv1.ReadRequest) (*pluginv1.ReadResponse, error) {
	content, err := s.impl.Read(ctx, wire.RefFromProto(req.GetRef()))
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.ReadResponse{Content: content}, nil
}

// Write serves Provider.Write.
func (s *docsServer) Write(ctx context.Context, req *pluginv1.WriteRequest) (*pluginv1.WriteResponse, error) {
	if err := s.impl.Write(ctx, wire.RefFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.WriteResponse{}, nil
}

// Append serves Provider.Append.
func (s *docsServer) Append(ctx context.Context, req *pluginv1.AppendRequest) (*pluginv1.AppendResponse, error) {
	if err := s.impl.Append(ctx, wire.RefFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.AppendResponse{}, nil
}

// Create serves Provider.Create.
func (s *docsServer) Create(ctx context.Context, req *pluginv1.CreateRequest) (*pluginv1.CreateResponse, error) {
	if err := s.impl.Create(ctx, wire.RefFromProto(req.GetRef()), req.GetContent()); err != nil {
		return nil, toGRPC(err)
	}
	return &pluginv1.CreateResponse{}, nil
}

// List serves Provider.List.
func (s *docsServer) List(ctx context.Context, req *pluginv1.ListRequest) (*pluginv1.ListResponse, error) {
	infos, err := s.impl.List(ctx, wire.ScopeFromProto(req))
	if err != nil {
		return nil, toGRPC(err)
	}
	return wire.InfosToProto(infos), nil
}
