package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// DefaultTimeout is how long the agent may send nothing before it is
// stopped, unless the agent's config says otherwise (timeout).
const DefaultTimeout = 10 * time.Minute

// DefaultInitTimeout is how long a command has to answer initialize: one
// that has not by then is not an ACP agent, or is stuck (init_timeout).
const DefaultInitTimeout = 60 * time.Second

// config is the part of an agent's config this backend reads.
type config struct {
	cli.Settings
	// Command is the agent and its arguments, e.g. ["gemini",
	// "--experimental-acp"]; required.
	Command []string `json:"command"`
	// MCP hands the daemon's MCP server to the agent's sessions; nil is
	// true.
	MCP *bool `json:"mcp"`
	// FS offers the agent the client's file system (fs/read_text_file,
	// fs/write_text_file, served inside the run's directories); nil is
	// true. Gemini CLI 0.61.0 cannot create a file through it (it takes
	// no error answer for a missing file as "not there"): false lets such
	// an agent use its own, inside the run's sandbox.
	FS *bool `json:"fs"`
	// RawInit is init_timeout as written; Init is it parsed.
	RawInit json.RawMessage `json:"init_timeout"`
	Init    time.Duration   `json:"-"`
}

// parseConfig reads the agent's config; its mistakes are permanent. A
// preset's command is the default of command.
func parseConfig(raw json.RawMessage, preset []string) (config, error) {
	var c config
	if err := cli.Decode("acp", raw, DefaultTimeout, &c, &c.Settings); err != nil {
		return c, err
	}
	if len(c.Command) == 0 && len(preset) > 0 {
		c.Command = preset
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		return c, backend.Permanent(errors.New(`acp: config: command is missing: name the agent and its arguments, e.g. {"command": ["gemini", "--experimental-acp"]}`))
	}
	c.Init = DefaultInitTimeout
	if len(c.RawInit) > 0 && string(c.RawInit) != "null" {
		d, err := cli.ParseTimeout(c.RawInit)
		if err != nil {
			return c, backend.Permanent(fmt.Errorf("acp: config: init_timeout: %w", err))
		}
		c.Init = d
	}
	return c, nil
}

// fs says whether the agent is offered the client's file system.
func (c config) fs() bool { return c.FS == nil || *c.FS }

// mcp says whether the daemon's MCP server goes to the agent.
func (c config) mcp() bool { return c.MCP == nil || *c.MCP }
