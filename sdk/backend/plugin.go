package backend

import (
	"context"
	"os"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// GRPCPlugin is the go-plugin glue for a backend: in a plugin process it
// serves Impl over gRPC, and in the daemon it makes the Backend that runs
// over the connection. sdk/plugin puts it in the plugin set under the name
// "backend"; authors never use it directly.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the backend a plugin serves; nil in the daemon.
	Impl Backend
	// Process says that Impl is served by a plugin process of its own
	// (plugin.Serve sets it): its one run sets the request's Env and moves
	// to its ProjectDir first, and any further run is refused. In-process
	// test hosts leave it unset and may run Impl many times.
	Process bool
}

var _ goplugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl as the plugin's BackendService.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	srv := &server{impl: p.Impl, process: p.Process}
	if p.Process {
		srv.key = os.Getenv(EnvProcessKey)
		os.Unsetenv(EnvProcessKey)
	}
	pluginv1.RegisterBackendServiceServer(s, srv)
	return nil
}

// GRPCClient returns the daemon's Backend for the connection. go-plugin
// cancels ctx when the plugin process exits, which ends a run in progress
// with sdk.ErrUnavailable instead of leaving it waiting.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &client{rpc: pluginv1.NewBackendServiceClient(c), done: ctx}, nil
}
