// Command agent-worker-backend-opencode is the acp backend's opencode
// preset as a plugin binary for plugins.d/: agents that run OpenCode in
// ACP mode (opencode acp), its command the default of config command (see
// plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
)

func main() { acp.ServePreset(clis.OpenCode) }
