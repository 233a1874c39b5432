package pluginclient

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/wire/client"
)

// backendPlugin is the daemon's half of the go-plugin glue of a backend:
// it makes the Backend that runs over the connection (the protocol's
// client, sdk/wire/client). go-plugin cancels ctx when the plugin process
// exits, which ends a run in progress with sdk.ErrUnavailable instead of
// leaving it waiting.
type backendPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

var _ goplugin.GRPCPlugin = (*backendPlugin)(nil)

func (*backendPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errClientOnly }

func (*backendPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return client.NewBackend(ctx, c), nil
}
