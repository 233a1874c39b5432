// Command protov2 is an agent-worker plugin from the future: it has the
// right cookie but serves only protocol version 2, which this daemon does
// not speak.
package main

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	hs := plugin.Handshake
	hs.ProtocolVersion = 2
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]goplugin.PluginSet{2: {}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}
