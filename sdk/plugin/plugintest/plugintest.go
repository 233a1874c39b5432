package plugintest

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// InfoClient asks a plugin what it is, as the daemon's catalog does when
// it fingerprints a binary.
type InfoClient interface {
	GetInfo(ctx context.Context) (plugin.Info, error)
}

// client serves cfg as plugin.Serve would, over gRPC on a local socket in
// this process, and returns the caller's end of the connection. Both ends
// close when the test ends.
func client(t testing.TB, cfg plugin.Config) goplugin.ClientProtocol {
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

// dispense returns what cfg's plugin serves under name, as T.
func dispense[T any](t testing.TB, cfg plugin.Config, name string) T {
	t.Helper()
	raw, err := client(t, cfg).Dispense(name)
	if err != nil {
		t.Fatalf("plugintest: dispense %s: %v", name, err)
	}
	v, ok := raw.(T)
	if !ok {
		t.Fatalf("plugintest: dispense %s: got %T", name, raw)
	}
	return v
}

// Backend returns b as the daemon sees it through the plugin protocol.
func Backend(t testing.TB, b backend.Backend) backend.Backend {
	t.Helper()
	return dispense[backend.Backend](t, plugin.Config{Info: plugin.Info{Name: "plugintest"}, Backend: b}, plugin.NameBackend)
}

// Docs returns p as the daemon sees it through the plugin protocol.
func Docs(t testing.TB, p docprovider.Provider) docprovider.Provider {
	t.Helper()
	return dispense[docprovider.Provider](t, plugin.Config{Info: plugin.Info{Name: "plugintest"}, Docs: p}, plugin.NameDocs)
}

// Info returns the InfoClient of a plugin served from cfg, to check what
// the daemon's catalog will learn about it. A cfg that Serve would refuse
// fails the test.
func Info(t testing.TB, cfg plugin.Config) InfoClient {
	t.Helper()
	return dispense[InfoClient](t, cfg, plugin.NameInfo)
}
