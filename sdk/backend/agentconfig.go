package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// AgentConfig is an agent's backend configuration, typed. The settings the
// daemon itself acts on or that every backend shares have fields; the
// keys only one backend knows (a mock script, codex's sandbox, a model's
// temperature) are kept in Extra, untouched. The daemon carries this one
// value from a workflow file or a POST /agents body to the store and into
// a run; it is JSON only in the store's column and on a wire (HTTP, and
// Agent.Config of a run request, which ParseAgentConfig reads back).
type AgentConfig struct {
	// MaxSteps caps model turns in one run; 0 is the backend's default.
	MaxSteps int
	// Timeout bounds one run inside the backend; 0 is its default.
	Timeout time.Duration
	// MCPServers are the agent's own MCP servers, by name.
	MCPServers map[string]MCPServerConfig
	// Env is added to the environment of the agent's plugin process.
	Env map[string]string
	// Tools names the workspace tool sets of the sdk backend: nil is its
	// default (all), empty is none.
	Tools []string
	// Provider points the sdk backend at an OpenAI-compatible endpoint.
	Provider *Provider
	// Extra holds every other key, each a JSON value, for the backend.
	Extra map[string]json.RawMessage
}

// MCPServerConfig is one of an agent's own MCP servers: a URL (with
// headers) or a command speaking stdio (with env).
type MCPServerConfig struct {
	Command []string          `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Provider is a model endpoint by name, with its base URL and the variable
// that holds its API key.
type Provider struct {
	Name      string `json:"name"`
	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// Config keys with a field of their own; Extra never holds them.
const (
	keyMaxSteps   = "max_steps"
	keyTimeout    = "timeout"
	keyMCPServers = "mcp_servers"
	keyEnv        = "env"
	keyTools      = "tools"
	keyProvider   = "provider"
)

// ConfigKeys are the keys AgentConfig has fields for, sorted.
var ConfigKeys = []string{keyEnv, keyMaxSteps, keyMCPServers, keyProvider, keyTimeout, keyTools}

// envName is what a variable name in env may look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsZero reports an empty configuration (JSON `{}`), so wire types can
// leave it out with `omitzero`.
func (c AgentConfig) IsZero() bool {
	return c.MaxSteps == 0 && c.Timeout == 0 && len(c.MCPServers) == 0 && len(c.Env) == 0 &&
		c.Tools == nil && c.Provider == nil && len(c.Extra) == 0
}

// MCPServerList is the agent's own MCP servers sorted by name, as a run
// request carries them.
func (c AgentConfig) MCPServerList() []MCPServer {
	var out []MCPServer
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) {
		s := c.MCPServers[name]
		out = append(out, MCPServer{Name: name, Command: s.Command, URL: s.URL, Env: s.Env, Headers: s.Headers})
	}
	return out
}

// EnvList is Env as sorted KEY=value entries for a process environment.
func (c AgentConfig) EnvList() []string {
	out := make([]string, 0, len(c.Env))
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		out = append(out, k+"="+c.Env[k])
	}
	return out
}

// Equal reports whether two configurations mean the same, whatever the
// spacing or key order of their Extra values.
func (c AgentConfig) Equal(o AgentConfig) bool {
	a, errA := json.Marshal(c)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// MarshalJSON writes one JSON object: Extra's keys beside the typed ones,
// in sorted key order, so equal configurations marshal to equal bytes.
func (c AgentConfig) MarshalJSON() ([]byte, error) {
	obj := make(map[string]any, len(c.Extra)+6)
	for k, v := range c.Extra {
		if slices.Contains(ConfigKeys, k) {
			return nil, fmt.Errorf("config: Extra holds %q, which has a field of its own", k)
		}
		var canon any
		if err := json.Unmarshal(v, &canon); err != nil {
			return nil, fmt.Errorf("config: %s is not JSON: %w", k, err)
		}
		obj[k] = canon
	}
	if c.MaxSteps != 0 {
		obj[keyMaxSteps] = c.MaxSteps
	}
	if c.Timeout != 0 {
		obj[keyTimeout] = c.Timeout.String()
	}
	if len(c.MCPServers) > 0 {
		obj[keyMCPServers] = c.MCPServers
	}
	if len(c.Env) > 0 {
		obj[keyEnv] = c.Env
	}
	if c.Tools != nil {
		obj[keyTools] = c.Tools // [] too: no tools
	}
	if c.Provider != nil {
		obj[keyProvider] = c.Provider
	}
	return json.Marshal(obj)
}

// UnmarshalJSON reads a JSON object (null and empty input are the empty
// configuration) and checks the typed keys, with errors that say what to
// write.
func (c *AgentConfig) UnmarshalJSON(b []byte) error {
	cfg, err := ParseAgentConfig(b)
	if err != nil {
		return err
	}
	*c = cfg
	return nil
}

// ParseAgentConfig reads an agent's configuration from its JSON form.
func ParseAgentConfig(raw []byte) (AgentConfig, error) {
	var c AgentConfig
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return c, errors.New("config must be a JSON object, such as {\"max_steps\": 20}")
	}
	take := func(key string, v any, want string) error {
		field, ok := obj[key]
		if !ok {
			return nil
		}
		delete(obj, key)
		if err := json.Unmarshal(field, v); err != nil {
			return fmt.Errorf("config %s: want %s", key, want)
		}
		return nil
	}
	var timeout json.RawMessage
	if err := errors.Join(
		take(keyMaxSteps, &c.MaxSteps, "a whole number"),
		take(keyTimeout, &timeout, "a duration"),
		take(keyMCPServers, &c.MCPServers, `an object of servers by name, such as {"web": {"url": "http://localhost:8080/mcp"}}`),
		take(keyEnv, &c.Env, `an object of strings, such as {"HTTPS_PROXY": "http://proxy:3128"}`),
		take(keyTools, &c.Tools, "a list of tool set names"),
		take(keyProvider, &c.Provider, `an object such as {"name": "local", "base_url": "http://localhost:11434/v1"}`),
	); err != nil {
		return AgentConfig{}, err
	}
	if c.MaxSteps < 0 {
		return AgentConfig{}, errors.New("config max_steps: cannot be negative")
	}
	if timeout != nil {
		d, err := parseTimeout(timeout)
		if err != nil {
			return AgentConfig{}, err
		}
		c.Timeout = d
	}
	for k, v := range c.Env {
		if !envName.MatchString(k) || strings.ContainsRune(v, 0) {
			return AgentConfig{}, fmt.Errorf("config env: %q is not a usable variable: names are letters, digits and _, values have no NUL", k)
		}
	}
	if len(obj) > 0 {
		c.Extra = obj
	}
	return c, nil
}

// parseTimeout reads "90s"-style strings or a number of seconds.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("config timeout: %q is not a duration: write one such as 10m", s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs <= 0 {
		return 0, fmt.Errorf("config timeout: want a duration such as \"10m\" or a number of seconds, not %s", raw)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
