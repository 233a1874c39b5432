package claude

import (
	"encoding/json"
	"regexp"
	"strconv"
	"time"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// DefaultTimeout is how long the CLI may print nothing before it is
// killed, unless the agent's config says otherwise: a model that thinks
// for long, or a long tool run, prints nothing meanwhile.
const DefaultTimeout = 10 * time.Minute

// daemonServer is the daemon's name in the MCP config; Claude Code offers
// its tools as mcp__agent-worker__<tool>, and allowing the server's name
// allows them all.
const daemonServer = "agent-worker"

// config is the part of an agent's config this backend reads; other keys
// (provider, a mock script) are ignored.
type config struct {
	cli.Settings
	AllowedTools []string `json:"allowed_tools"`
	MaxSteps     int      `json:"max_steps"`
}

// parseConfig reads the agent's config. A config that cannot be read is
// the user's mistake, so its error is permanent.
func parseConfig(raw json.RawMessage) (config, error) {
	var c config
	err := cli.Decode("claude", raw, DefaultTimeout, &c, &c.Settings)
	return c, err
}

// providerPrefix is "anthropic/" and the like: a plain word and a slash.
var providerPrefix = regexp.MustCompile(`^[A-Za-z0-9_.-]+/`)

// model maps an agent's model to claude's --model: the provider prefix
// that workflows share with other backends is stripped
// ("anthropic/claude-sonnet-4-5" → "claude-sonnet-4-5"); aliases (sonnet,
// opus, haiku) and full names pass through, and so do ids that are not
// provider/name (a Bedrock ARN has a colon before its slash).
func model(m string) string {
	return providerPrefix.ReplaceAllString(m, "")
}

// invocation is everything that goes on one claude command line.
type invocation struct {
	prompt, model, system string
	mcpConfig             string // path of the MCP config file
	settings              string // path of the gate hook's settings file; "" for none
	resume                string // session id; "" starts a new conversation
	maxTurns              int
	allowedTools          []string // beyond the daemon's
	// dirs are the workspace's repositories, which claude's tools may
	// reach beside the project directory (--add-dir); the run's sandbox
	// keeps the read-only ones read-only.
	dirs []string
}

// args is claude's command line. Values that may start with a dash go
// after "=" or "--", and the variadic --allowedTools comes last so that it
// cannot swallow what follows.
func (in invocation) args() []string {
	a := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if m := model(in.model); m != "" {
		a = append(a, "--model="+m)
	}
	if in.system != "" {
		a = append(a, "--append-system-prompt="+in.system)
	}
	for _, d := range in.dirs {
		// "=" and a flag after it: the variadic option takes this one
		// directory and nothing that follows.
		a = append(a, "--add-dir="+d)
	}
	a = append(a, "--mcp-config", in.mcpConfig, "--strict-mcp-config")
	if in.settings != "" {
		// The hook's answers come back on the stream, where the
		// daemon's refusals become gate events.
		a = append(a, "--settings", in.settings, "--include-hook-events")
	}
	if in.resume != "" {
		a = append(a, "--resume", in.resume)
	}
	if in.maxTurns > 0 {
		a = append(a, "--max-turns", strconv.Itoa(in.maxTurns))
	}
	a = append(a, "--allowedTools", "mcp__"+daemonServer)
	a = append(a, in.allowedTools...)
	return append(a, "--", in.prompt)
}

// mcpConfig renders the --mcp-config file: the daemon as "agent-worker"
// with the run's token, plus the agent's own servers from the request and
// from its config. The daemon's entry always wins its name, so that no
// config can swap the run's token or server.
func mcpConfig(req backend.Request, cfg config) ([]byte, error) {
	return cli.MCPConfig(req, cfg.MCPServers, daemonServer, true)
}
