// Command agent-worker-backend-codex-acp is the acp backend's codex-acp
// preset as a plugin binary for plugins.d/: agents that run Codex through
// Zed's ACP adapter (codex-acp), its command the default of config command
// (see plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
)

func main() { acp.ServePreset(clis.CodexACP) }
