package plugin

import (
	"context"
	"slices"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// infoPlugin is the go-plugin glue of InfoService, which every plugin
// serves; its client half is plugintest's (the daemon's is
// host/pluginclient's).
type infoPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	info   Info
	status func(context.Context) string // Config.Status; may be nil
}

var _ goplugin.GRPCPlugin = (*infoPlugin)(nil)

func (p *infoPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterInfoServiceServer(s, &infoServer{info: p.info, status: p.status})
	return nil
}

func (p *infoPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &infoClient{rpc: pluginv1.NewInfoServiceClient(c), done: ctx}, nil
}

type infoServer struct {
	pluginv1.UnimplementedInfoServiceServer
	info   Info
	status func(context.Context) string
}

// GetInfo answers with the plugin's Info and, when the plugin reports one,
// its status as of now.
func (s *infoServer) GetInfo(ctx context.Context, _ *pluginv1.GetInfoRequest) (*pluginv1.GetInfoResponse, error) {
	info := s.info
	if s.status != nil {
		info.Status = s.status(ctx)
	}
	return infoToProto(info), nil
}

// infoClient asks a plugin served in a test what it is (plugintest.Info).
type infoClient struct {
	rpc  pluginv1.InfoServiceClient
	done context.Context // cancelled when the plugin process exits
}

// GetInfo returns the plugin's Info; a plugin that is gone gives
// sdk.ErrUnavailable.
func (c *infoClient) GetInfo(ctx context.Context) (Info, error) {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop()
	resp, err := c.rpc.GetInfo(ctx, &pluginv1.GetInfoRequest{})
	if err != nil {
		err, _ = grpcerr.FromCall(ctx, c.done, err)
		return Info{}, err
	}
	return infoFromProto(resp), nil
}

func infoToProto(in Info) *pluginv1.GetInfoResponse {
	return &pluginv1.GetInfoResponse{
		Name:         in.Name,
		Kind:         in.Kind,
		Version:      in.Version,
		ApiVersions:  slices.Clone(in.APIVersions),
		Capabilities: slices.Clone(in.Capabilities),
		Status:       in.Status,
	}
}

func infoFromProto(r *pluginv1.GetInfoResponse) Info {
	return Info{
		Name:         r.GetName(),
		Kind:         r.GetKind(),
		Version:      r.GetVersion(),
		APIVersions:  slices.Clone(r.GetApiVersions()),
		Capabilities: slices.Clone(r.GetCapabilities()),
		Status:       r.GetStatus(),
	}
}
