package main

import (
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
)

// The conformance suite, in-process and over real gRPC.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backend.Backend { return echo{} })
}

func TestConformanceOverGRPC(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.Backend { return plugintest.Backend(t, echo{}) })
}
