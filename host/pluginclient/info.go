package pluginclient

import (
	"context"
	"slices"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// InfoClient asks a started plugin what it is; the daemon's catalog calls
// it once per binary (with a throwaway client) and keeps the answer beside
// the binary's sha256.
type InfoClient interface {
	GetInfo(ctx context.Context) (plugin.Info, error)
}

// infoPlugin is the daemon's half of the go-plugin glue of InfoService,
// which every plugin serves.
type infoPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

var _ goplugin.GRPCPlugin = (*infoPlugin)(nil)

func (*infoPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errClientOnly }

func (*infoPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &infoClient{rpc: pluginv1.NewInfoServiceClient(c), done: ctx}, nil
}

type infoClient struct {
	rpc  pluginv1.InfoServiceClient
	done context.Context // cancelled when the plugin process exits
}

// GetInfo returns the plugin's Info; a plugin that is gone gives
// sdk.ErrUnavailable.
func (c *infoClient) GetInfo(ctx context.Context) (plugin.Info, error) {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop()
	resp, err := c.rpc.GetInfo(ctx, &pluginv1.GetInfoRequest{})
	if err != nil {
		err, _ = grpcerr.FromCall(ctx, c.done, err)
		return plugin.Info{}, err
	}
	return infoFromProto(resp), nil
}

// infoFromProto reads what plugin.Serve's info service answers (sdk/plugin
// writes it).
func infoFromProto(r *pluginv1.GetInfoResponse) plugin.Info {
	return plugin.Info{
		Name:         r.GetName(),
		Kind:         r.GetKind(),
		Version:      r.GetVersion(),
		APIVersions:  slices.Clone(r.GetApiVersions()),
		Capabilities: slices.Clone(r.GetCapabilities()),
		Status:       r.GetStatus(),
	}
}
