package grpcplugin

import (
	"context"
	"os"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/wire/client"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// Backend is the go-plugin glue for a backend: in a plugin process it
// serves Impl over gRPC; in an in-process test host (plugintest) it also
// makes the Backend that runs over the connection. sdk/plugin puts it in
// the plugin set under the name plugin.NameBackend.
type Backend struct {
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the backend a plugin serves.
	Impl backend.Backend
	// Process says that Impl is served by a plugin process of its own
	// (plugin.Serve sets it): its one run sets the request's Env and moves
	// to its ProjectDir first, and any further run is refused. In-process
	// test hosts leave it unset and may run Impl many times.
	Process bool
}

var _ goplugin.GRPCPlugin = (*Backend)(nil)

// GRPCServer registers Impl as the plugin's BackendService.
func (p *Backend) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	srv := &backendServer{impl: p.Impl, process: p.Process}
	if p.Process {
		srv.key = os.Getenv(backend.EnvProcessKey)
		os.Unsetenv(backend.EnvProcessKey)
	}
	pluginv1.RegisterBackendServiceServer(s, srv)
	return nil
}

// GRPCClient returns the protocol's Backend that runs over the connection
// (sdk/wire/client, the daemon's too), for plugintest. go-plugin cancels
// ctx when the connection ends, which ends a run in progress with
// sdk.ErrUnavailable instead of leaving it waiting.
func (p *Backend) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return client.NewBackend(ctx, c), nil
}
