package clis

// CLI is one agent CLI a backend drives.
type CLI struct {
	// Backend is the backend's name, Command the executable it runs.
	Backend, Command string
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

// All lists the agent CLIs in the order doctor checks them.
var All = []CLI{Claude, Codex, Cursor}
