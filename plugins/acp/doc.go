// Package acp is the Agent Client Protocol backend: an agent that speaks
// ACP over its stdio (Gemini CLI, OpenCode and Goose natively, Claude Code
// and Codex through their published adapters) runs as a team member. The
// plugin starts the agent's command per run in the run's directory and
// sandbox, and is the ACP client: it initializes (protocol version 1, the
// file system capabilities), hands the agent the daemon's MCP server,
// opens a session (session/new, or session/load of the run's session to
// resume), prompts it with the run's prompt and maps its session/update
// notifications into the run's events. The agent's permission requests
// are answered by the daemon's gate and the agent's approvals, never
// approved blindly; its file requests are served inside the run's
// directories only.
//
// The protocol itself is github.com/coder/acp-go-sdk, which follows the
// published schema (@agentclientprotocol/sdk's schema.json, protocol
// version 1); this package holds what agent-worker does with it.
// cmd/agent-worker-backend-acp is its thin main.
package acp
