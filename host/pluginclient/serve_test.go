package pluginclient_test

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// both is one name of the plugin set with the plugin's half from
// plugin.PluginSet (what plugin.Serve serves) and the daemon's from
// pluginclient's host set (what ClientConfig dispenses), so a test runs the
// real wire in one process.
type both struct {
	goplugin.NetRPCUnsupportedPlugin
	server, client goplugin.GRPCPlugin
}

func (b *both) GRPCServer(br *goplugin.GRPCBroker, s *grpc.Server) error {
	return b.server.GRPCServer(br, s)
}

func (b *both) GRPCClient(ctx context.Context, br *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return b.client.GRPCClient(ctx, br, c)
}

// serve serves cfg as plugin.Serve would, over gRPC on a local socket in
// this process, and returns the daemon's end of the connection, ready for
// pluginclient.DispenseInfo, DispenseBackend or DispenseDocs. Both ends
// close when the test ends.
func serve(t *testing.T, cfg plugin.Config) goplugin.ClientProtocol {
	t.Helper()
	served, err := plugin.PluginSet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := pluginclient.ClientConfig(nil, nil).VersionedPlugins[plugin.ProtocolVersion]
	set := goplugin.PluginSet{}
	for name, p := range served {
		set[name] = &both{server: p.(goplugin.GRPCPlugin), client: host[name].(goplugin.GRPCPlugin)}
	}
	client, server := goplugin.TestPluginGRPCConn(t, false, set)
	t.Cleanup(func() {
		// Stop the server first: client.Close asks the server to stop
		// itself, and a second Stop at the same time races in go-plugin.
		server.Stop()
		_ = client.Close()
	})
	return client
}

// serveBackend returns b as the daemon sees it through the plugin
// protocol: the daemon's client over the SDK's server.
func serveBackend(t *testing.T, b backend.Backend) backend.Backend {
	t.Helper()
	out, err := pluginclient.DispenseBackend(serve(t, plugin.Config{Info: plugin.Info{Name: "pluginclient-test"}, Backend: b}))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// serveDocs returns p as the daemon sees it through the plugin protocol.
func serveDocs(t *testing.T, p docprovider.Provider) docprovider.Provider {
	t.Helper()
	out, err := pluginclient.DispenseDocs(serve(t, plugin.Config{Info: plugin.Info{Name: "pluginclient-test"}, Docs: p}))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
