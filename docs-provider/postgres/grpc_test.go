package postgresdocs_test

import (
	"testing"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// The provider conforms as the daemon sees it: through the plugin
// protocol, where errors and listings cross a gRPC boundary.
func TestConformanceOverGRPC(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return plugintest.Docs(t, open(t, pgtest.Shared(t).NewDatabase(t)))
	})
}
