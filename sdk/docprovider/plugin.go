package docprovider

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// GRPCPlugin is the go-plugin glue for a docs provider: in a plugin process
// it serves Impl over gRPC, and in the daemon it makes the Provider that
// calls over the connection. sdk/plugin puts it in the plugin set under the
// name "docs"; authors never use it directly.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the provider a plugin serves; nil in the daemon.
	Impl Provider
}

var _ goplugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl as the plugin's DocumentProviderService.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterDocumentProviderServiceServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns the daemon's Provider for the connection. go-plugin
// cancels ctx when the plugin process exits, which fails calls in progress
// with sdk.ErrUnavailable; the daemon then restarts the provider.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &client{rpc: pluginv1.NewDocumentProviderServiceClient(c), done: ctx}, nil
}
