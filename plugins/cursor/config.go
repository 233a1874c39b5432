package cursor

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// DefaultTimeout is how long cursor-agent may print nothing before it is
// killed, unless the agent's config says otherwise.
const DefaultTimeout = 10 * time.Minute

// config is the part of an agent's config this backend reads; other keys
// (max_steps, provider, a mock script) are ignored.
type config struct {
	cli.Settings
	Args []string `json:"args"`
}

// parseConfig reads the agent's config. A config that cannot be read is
// the user's mistake, so the error is permanent.
func parseConfig(raw json.RawMessage) (config, error) {
	var c config
	err := cli.Decode("cursor", raw, DefaultTimeout, &c, &c.Settings)
	return c, err
}

// mcpConfig renders .cursor/mcp.json: the daemon as "agent-worker", plus
// the agent's own servers from the request and from its config. The daemon
// entry always wins its name, so a config cannot take the run's token.
func mcpConfig(req backend.Request, cfg config) ([]byte, error) {
	return cli.MCPConfig(req, cfg.MCPServers, daemonServer, false)
}

// daemonServer is the name the daemon's MCP server has in .cursor/mcp.json.
const daemonServer = "agent-worker"

var (
	claudeVersion = regexp.MustCompile(`^(sonnet|opus|haiku)-(\d+)-(\d+)(.*)$`)
	dateSuffix    = regexp.MustCompile(`-\d{8}$`)
)

// model maps an agent's model to a cursor-agent --model name: the provider
// prefix is stripped ("anthropic/…", "openai:…"), and Anthropic's API names
// become Cursor's ("claude-sonnet-4-5-20250929" → "sonnet-4.5"), so one
// workflow can name models the same way for every backend. Cursor's own
// names ("auto", "gpt-5", "sonnet-4.5-thinking") pass through.
func model(m string) string {
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if _, rest, ok := strings.Cut(m, ":"); ok {
		m = rest
	}
	if rest, ok := strings.CutPrefix(m, "claude-"); ok {
		rest = dateSuffix.ReplaceAllString(rest, "")
		if claudeVersion.MatchString(rest) {
			return claudeVersion.ReplaceAllString(rest, "$1-$2.$3$4")
		}
		if strings.HasPrefix(rest, "sonnet-") || strings.HasPrefix(rest, "opus-") || strings.HasPrefix(rest, "haiku-") {
			return rest
		}
	}
	return m
}
