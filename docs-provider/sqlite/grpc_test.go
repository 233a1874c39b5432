package sqlitedocs_test

import (
	"path/filepath"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
)

// The provider conforms as the daemon sees it: through the plugin
// protocol, where errors and listings cross a gRPC boundary.
func TestConformanceOverGRPC(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return plugintest.Docs(t, open(t, filepath.Join(t.TempDir(), "docs.db")))
	})
}
