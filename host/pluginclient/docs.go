package pluginclient

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/wire/client"
)

// docsPlugin is the daemon's half of the go-plugin glue of a docs
// provider: it makes the Provider that calls over the connection (the
// protocol's client, sdk/wire/client). go-plugin cancels ctx when the
// plugin process exits, which fails calls in progress with
// sdk.ErrUnavailable; the daemon then restarts the provider.
type docsPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

var _ goplugin.GRPCPlugin = (*docsPlugin)(nil)

func (*docsPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errClientOnly }

func (*docsPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return client.NewDocs(ctx, c), nil
}
