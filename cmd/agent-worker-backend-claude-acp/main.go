// Command agent-worker-backend-claude-acp is the acp backend's claude-acp
// preset as a plugin binary for plugins.d/: agents that run Claude Code
// through Zed's ACP adapter (claude-agent-acp), its command the default of
// config command (see plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
)

func main() { acp.ServePreset(clis.ClaudeACP) }
