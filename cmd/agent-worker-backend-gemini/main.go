// Command agent-worker-backend-gemini is the acp backend's gemini preset
// as a plugin binary for plugins.d/: agents that run Gemini CLI in ACP
// mode (gemini --acp), its command the default of config command (see
// plugins/acp and plugins/clis).
package main

import (
	"github.com/agent-worker/agent-worker/plugins/acp"
	"github.com/agent-worker/agent-worker/plugins/clis"
)

func main() { acp.ServePreset(clis.Gemini) }
