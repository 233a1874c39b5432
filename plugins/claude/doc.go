// Package claude is the Claude Code backend (backend name "claude"): each
// run is one `claude -p` process, in the agent's project directory, that
// reaches the daemon through an MCP config written into the run's private
// work dir (never into the user's project). It is a library; the plugin
// binary is cmd/agent-worker-backend-claude.
//
// A run connects to the daemon as its agent, builds the shared prompt
// (sdk/worker), and runs
//
//	claude -p --output-format stream-json --verbose [--model=M]
//	  [--append-system-prompt=SYSTEM] [--add-dir=REPO...] --mcp-config WORKDIR/mcp.json
//	  --strict-mcp-config --settings WORKDIR/settings.json
//	  --include-hook-events [--resume SESSION] [--max-turns N]
//	  --allowedTools mcp__agent-worker [TOOLS...] -- PROMPT
//
// with stdin closed, turning its stream-json lines into run events. The
// session id of the init line is reported, and the daemon hands it back as
// the next run's ResumeSession; a session the CLI no longer knows is
// dropped and the run starts a new conversation. The backend never passes
// --dangerously-skip-permissions (Claude Code refuses it as root): the
// daemon's tools are allowed by name, and anything more must be listed in
// allowed_tools.
//
// Gates (issue 43): the settings file, private to the run, gives Claude
// Code a PreToolUse hook on every tool whose command is this plugin's own
// binary, `agent-worker-backend-claude gate-hook WORKDIR/mcp.json`
// (GateHook). It asks the daemon's gate (POST <mcp url>/gate with the
// run's token, both read from the MCP config) whether the phase of the
// agent's effort allows the call (Bash with its command; Edit, Write,
// MultiEdit, NotebookEdit, Read… with their file; the agent's own MCP
// servers' tools), and prints Claude Code's deny decision with the
// phase's reason when it does not; the model reads the reason as the
// tool's result. A daemon that cannot be asked denies (a daemon run fails
// closed). The daemon's own tools are not asked by the hook: the daemon
// gates them itself. The hook's answers come back on the stream
// (--include-hook-events), where a refusal becomes the run's gate event.
// Hooks of the user's own settings still run beside it.
//
// The agent's config (a JSON object; every key optional):
//
//	cli            path or name of the claude binary (default: claude on PATH)
//	timeout        kill the CLI after this long without output: a Go
//	               duration ("10m", the default) or seconds
//	allowed_tools  more tools to allow, in Claude Code's syntax
//	               (["Read", "Edit", "Bash(go test:*)"])
//	mcp_servers    the agent's own MCP servers, by name:
//	               {"url": ..., "headers": {...}} or {"command": [prog, args...], "env": {...}}
//	env            extra environment variables for the CLI
//	max_steps      --max-turns
//
// Under a sandbox the CLI cannot read or write the user's ~/.claude (or
// ~/.claude.json), so a confined run sets CLAUDE_CONFIG_DIR to
// STATEDIR/config, created 0700, where the CLI keeps its settings and
// conversations across the agent's runs; a `claude login` made in the
// home directory is not seen there, so such an agent authenticates with
// ANTHROPIC_API_KEY (or another variable the CLI reads) in its env. An
// agent whose env sets CLAUDE_CONFIG_DIR keeps its own, which its sandbox
// must then grant (sandbox: {write: [...]}).
//
// Models: a provider prefix is stripped ("anthropic/claude-sonnet-4-5"
// runs claude-sonnet-4-5); aliases such as sonnet, opus and haiku pass
// through; no model leaves the choice to Claude Code.
package claude
