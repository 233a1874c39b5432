package clis

// CLI is one agent CLI a backend drives.
type CLI struct {
	// Backend is the backend's name, Command the executable it runs.
	Backend, Command string
	// ConfigEnv is the variable that moves the CLI's own config
	// directory, for a preset whose confined run cannot use the user's
	// (the sandbox grants neither ~/.claude nor ~/.codex): the backend
	// points it into the agent's state directory. "" for none.
	ConfigEnv string
	// ConfigFiles are written into that directory when they are not
	// there yet (paths relative to it): settings that keep a confined
	// CLI from calling home.
	ConfigFiles map[string]string
	// Env is the preset's environment where the agent's env does not
	// set the variable.
	Env map[string]string
	// NoFS marks a CLI that is offered no client file system unless the
	// agent's config says fs: true.
	NoFS bool
	// ACP is the arguments that start Command as an Agent Client
	// Protocol agent, for the acp backend's presets (nil for the
	// backends with an adapter of their own).
	ACP []string
	// Tested is the version the end-to-end tests run; "" for none.
	Tested string
	// Install is the shell command that installs the tested version.
	Install string
}

// The agent CLIs, each with its install command.
var (
	Claude = CLI{Backend: "claude", Command: "claude", Tested: "2.1.197",
		Install: "npm install -g @anthropic-ai/claude-code@2.1.197"}
	Codex = CLI{Backend: "codex", Command: "codex", Tested: "0.169.0",
		Install: "npm install -g @openai/codex@0.169.0"}
	Cursor = CLI{Backend: "cursor", Command: "cursor-agent",
		Install: "curl https://cursor.com/install -fsS | bash"}
)

// The acp backend's presets: agent CLIs that speak the Agent Client
// Protocol, natively or through an adapter, each a backend of its own
// name (plugins/acp.Preset).
var (
	Gemini = CLI{Backend: "gemini", Command: "gemini", ACP: []string{"--acp"}, Tested: "0.61.0",
		Install: "npm install -g @google/gemini-cli@0.61.0",
		// Gemini CLI 0.61.0: its home moves with GEMINI_CLI_HOME; in a
		// folder it does not trust it starts no MCP server, ours
		// included; through a client file system it cannot create a
		// file (it reads the file first and takes no error as "not
		// there"), so it writes itself, in the run's sandbox.
		ConfigEnv: "GEMINI_CLI_HOME",
		ConfigFiles: map[string]string{".gemini/settings.json": `{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, ` +
			`"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}, "ide": {"enabled": false}}` + "\n"},
		Env:  map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_TELEMETRY_ENABLED": "false"},
		NoFS: true}
	ClaudeACP = CLI{Backend: "claude-acp", Command: "claude-agent-acp", ACP: []string{}, ConfigEnv: "CLAUDE_CONFIG_DIR", Tested: "0.23.1",
		Install: "npm install -g @zed-industries/claude-agent-acp@0.23.1"}
	CodexACP = CLI{Backend: "codex-acp", Command: "codex-acp", ACP: []string{}, ConfigEnv: "CODEX_HOME", Tested: "0.16.0",
		Install: "npm install -g @zed-industries/codex-acp@0.16.0"}
	OpenCode = CLI{Backend: "opencode", Command: "opencode", ACP: []string{"acp"},
		Install: "npm install -g opencode-ai"}
)

// All lists the agent CLIs in the order doctor checks them.
var All = []CLI{Claude, Codex, Cursor, Gemini, ClaudeACP, CodexACP, OpenCode}

// ACPPresets are the CLIs the acp backend has a preset for.
var ACPPresets = []CLI{Gemini, ClaudeACP, CodexACP, OpenCode}
