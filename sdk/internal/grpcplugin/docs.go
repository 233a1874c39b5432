package grpcplugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/wire/client"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// Docs is the go-plugin glue for a docs provider: in a plugin process it
// serves Impl over gRPC; in an in-process test host (plugintest) it also
// makes the Provider that calls over the connection. sdk/plugin puts it in
// the plugin set under the name plugin.NameDocs.
type Docs struct {
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the provider a plugin serves.
	Impl docprovider.Provider
}

var _ goplugin.GRPCPlugin = (*Docs)(nil)

// GRPCServer registers Impl as the plugin's DocumentProviderService.
func (p *Docs) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterDocumentProviderServiceServer(s, &docsServer{impl: p.Impl})
	return nil
}

// GRPCClient returns the protocol's Provider that calls over the
// connection (sdk/wire/client, the daemon's too), for plugintest.
func (p *Docs) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return client.NewDocs(ctx, c), nil
}
