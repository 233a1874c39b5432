package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/sandbox"
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
	// Sandbox is the agent's own sandbox policy, over the daemon's
	// default; nil: the default.
	Sandbox *SandboxConfig
	// Approvals are the agent's actions that wait for a person's
	// approval; nil: none.
	Approvals *ApprovalPolicy
	// Limits are what one of the agent's runs may use (processes and
	// threads, memory, CPU), over the daemon's --run-limits; nil: those.
	Limits *RunLimits
	// Extra holds every other key, each a JSON value, for the backend.
	Extra map[string]json.RawMessage
}

// SandboxConfig is an agent's `sandbox:` setting: what its runs may reach
// beyond what the daemon gives every run (its directories, what executing
// programs and its backend need). Paths are absolute once the daemon has
// them (a workflow file's are resolved against its directory, ~ expands).
type SandboxConfig struct {
	// Read and Write are further paths the runs may read, or also write.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network is the TCP the agent's tool commands may reach, and its
	// runs beyond the daemon's port and model endpoints: nil is none.
	Network *SandboxNetwork `json:"network,omitempty"`
	// Mode "off" runs the agent unconfined (shown as a warning); "" and
	// "on" confine it.
	Mode string `json:"mode,omitempty"`
}

// SandboxNetwork is `network:` of a sandbox: none, all, or TCP ports.
type SandboxNetwork struct {
	All   bool
	Ports []uint16
}

// Sandbox modes.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// Off reports an agent whose runs are not confined.
func (c *SandboxConfig) Off() bool { return c != nil && c.Mode == SandboxOff }

// MarshalJSON writes "none", "all" or the list of ports.
func (n SandboxNetwork) MarshalJSON() ([]byte, error) {
	switch {
	case n.All:
		return []byte(`"all"`), nil
	case len(n.Ports) == 0:
		return []byte(`"none"`), nil
	}
	return json.Marshal(n.Ports)
}

// UnmarshalJSON reads "none", "all" or a list of TCP ports (1-65535).
func (n *SandboxNetwork) UnmarshalJSON(b []byte) error {
	var word string
	if json.Unmarshal(b, &word) == nil {
		switch word {
		case "none":
			*n = SandboxNetwork{}
			return nil
		case "all":
			*n = SandboxNetwork{All: true}
			return nil
		}
		return fmt.Errorf("sandbox network: %q: write none, all or a list of TCP ports such as [443, 8080]", word)
	}
	var ports []int
	if err := json.Unmarshal(b, &ports); err != nil {
		return errors.New("sandbox network: write none, all or a list of TCP ports such as [443, 8080]")
	}
	out := SandboxNetwork{}
	for _, p := range ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("sandbox network: %d is not a TCP port (1-65535)", p)
		}
		if !slices.Contains(out.Ports, uint16(p)) {
			out.Ports = append(out.Ports, uint16(p))
		}
	}
	*n = out
	return nil
}

// validate checks the mode, expands a leading ~ and checks that the paths
// are absolute, and cleans them.
func (c *SandboxConfig) validate() error {
	switch c.Mode {
	case "", SandboxOn, SandboxOff:
	default:
		return fmt.Errorf("config sandbox mode: %q: write on or off", c.Mode)
	}
	for _, list := range [][]string{c.Read, c.Write} {
		for i, p := range list {
			p = sandbox.ExpandHome(p)
			if !filepath.IsAbs(p) {
				return fmt.Errorf("config sandbox: path %q is not absolute: write /abs/path or ~/path (a workflow file's paths are resolved against its directory)", list[i])
			}
			list[i] = filepath.Clean(p)
		}
	}
	return nil
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
	keySandbox    = "sandbox"
	keyApprovals  = "approvals"
	keyLimits     = "limits"
)

// ConfigKeys are the keys AgentConfig has fields for, sorted.
var ConfigKeys = []string{keyApprovals, keyEnv, keyLimits, keyMaxSteps, keyMCPServers, keyProvider, keySandbox, keyTimeout, keyTools}

// envName is what a variable name in env may look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsZero reports an empty configuration (JSON `{}`), so wire types can
// leave it out with `omitzero`.
func (c AgentConfig) IsZero() bool {
	return c.MaxSteps == 0 && c.Timeout == 0 && len(c.MCPServers) == 0 && len(c.Env) == 0 &&
		c.Tools == nil && c.Provider == nil && c.Sandbox == nil && c.Approvals == nil && c.Limits == nil && len(c.Extra) == 0
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
		// A string sandbox is codex's own mode; only an object is ours.
		if slices.Contains(ConfigKeys, k) && (k != keySandbox || c.Sandbox != nil || bytes.HasPrefix(bytes.TrimSpace(v), []byte("{"))) {
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
	if c.Sandbox != nil {
		obj[keySandbox] = c.Sandbox
	}
	if c.Approvals != nil {
		obj[keyApprovals] = c.Approvals
	}
	if c.Limits != nil {
		obj[keyLimits] = c.Limits
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
	// sandbox as a string is codex's own sandbox_mode (kept in Extra for
	// it); as an object it is the agent's sandbox policy.
	if v, ok := obj[keySandbox]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		delete(obj, keySandbox)
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		c.Sandbox = &SandboxConfig{}
		if err := dec.Decode(c.Sandbox); err != nil {
			return AgentConfig{}, fmt.Errorf("config sandbox: %s: write {read: [paths], write: [paths], network: none | all | [ports], mode: on | off}", strings.TrimPrefix(err.Error(), "json: "))
		}
		if err := c.Sandbox.validate(); err != nil {
			return AgentConfig{}, err
		}
	}
	if v, ok := obj[keyApprovals]; ok {
		delete(obj, keyApprovals)
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		c.Approvals = &ApprovalPolicy{}
		if err := dec.Decode(c.Approvals); err != nil {
			return AgentConfig{}, fmt.Errorf("config approvals: %s: write {integrate: true, spawn: true, shell: [patterns], tools: [names], timeout: 30m}", strings.TrimPrefix(err.Error(), "json: "))
		}
		if err := c.Approvals.validate(); err != nil {
			return AgentConfig{}, err
		}
	}
	if v, ok := obj[keyLimits]; ok {
		delete(obj, keyLimits)
		c.Limits = &RunLimits{}
		if err := json.Unmarshal(v, c.Limits); err != nil {
			return AgentConfig{}, err
		}
	}
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
