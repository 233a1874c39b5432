package file_test

import (
	"testing"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
)

// The provider conforms as the daemon sees it: through the plugin
// protocol, where errors and listings cross a gRPC boundary.
func TestConformanceOverGRPC(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return plugintest.Docs(t, file.New(t.TempDir()))
	})
}
