package sdk

import "github.com/hashicorp/go-plugin"

// ProtocolVersion is the major version of the plugin protocol
// (proto package agentworker.plugin.v1). Additive changes keep it; a
// breaking change adds version 2 beside it.
const ProtocolVersion = 1

// Handshake is shared by the daemon and every plugin. The cookie is not a
// secret; it stops a user from running a plugin binary by hand and seeing
// gibberish, and it never changes.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "AGENT_WORKER_PLUGIN",
	MagicCookieValue: "b7c1e3f0-agent-worker-plugin-v1-5d2a9c8e",
}
