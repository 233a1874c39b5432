package plugintest

import (
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// Client serves cfg as plugin.Serve would, over gRPC on a local socket in
// this process, and returns the daemon's end of the connection, ready for
// plugin.DispenseInfo, DispenseBackend or DispenseDocs. Both ends close
// when the test ends.
func Client(t testing.TB, cfg plugin.Config) goplugin.ClientProtocol {
	t.Helper()
	set, err := plugin.PluginSet(cfg)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
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

// Backend returns b as the daemon sees it through the plugin protocol.
func Backend(t testing.TB, b backend.Backend) backend.Backend {
	t.Helper()
	out, err := plugin.DispenseBackend(Client(t, plugin.Config{Info: plugin.Info{Name: "plugintest"}, Backend: b}))
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return out
}

// Docs returns p as the daemon sees it through the plugin protocol.
func Docs(t testing.TB, p docprovider.Provider) docprovider.Provider {
	t.Helper()
	out, err := plugin.DispenseDocs(Client(t, plugin.Config{Info: plugin.Info{Name: "plugintest"}, Docs: p}))
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return out
}

// Info returns the InfoClient of a plugin served from cfg, to check what
// the daemon's catalog will learn about it.
func Info(t testing.TB, cfg plugin.Config) plugin.InfoClient {
	t.Helper()
	out, err := plugin.DispenseInfo(Client(t, cfg))
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return out
}
