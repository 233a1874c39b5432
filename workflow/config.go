package workflow

import (
	"encoding/json"
	"slices"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// BackendConfig is the agent's backend configuration, typed, as the
// daemon stores it and hands it to a run: the keys of `config:` kept for
// the backend (so the mock backend finds its script), plus max_steps,
// timeout, mcp_servers (by name), env, tools, provider and sandbox when
// they are set. Parse rejects a `config:` key that would collide with these.
func (a Agent) BackendConfig() backend.AgentConfig {
	c := backend.AgentConfig{MaxSteps: a.MaxSteps, Timeout: a.Timeout, Env: a.Env, Tools: a.Tools}
	if len(a.Config) > 0 {
		c.Extra = make(map[string]json.RawMessage, len(a.Config))
		for k, v := range a.Config {
			c.Extra[k] = v
		}
	}
	if len(a.MCPServers) > 0 {
		c.MCPServers = make(map[string]backend.MCPServerConfig, len(a.MCPServers))
		for _, s := range a.MCPServers {
			c.MCPServers[s.Name] = backend.MCPServerConfig{Command: s.Command, URL: s.URL, Env: s.Env, Headers: s.Headers}
		}
	}
	if p := a.Provider; p != nil {
		c.Provider = &backend.Provider{Name: p.Name, BaseURL: p.BaseURL, APIKeyEnv: p.APIKeyEnv}
	}
	c.Sandbox = cloneSandbox(a.Sandbox)
	c.Approvals = cloneApprovals(a.Approvals)
	if a.Limits != nil {
		l := *a.Limits
		c.Limits = &l
	}
	return c
}

// cloneSandbox copies s so that a stored or resolved agent never shares
// its lists with the parsed file.
func cloneSandbox(s *backend.SandboxConfig) *backend.SandboxConfig {
	if s == nil {
		return nil
	}
	out := *s
	out.Read, out.Write = slices.Clone(s.Read), slices.Clone(s.Write)
	if s.Network != nil {
		out.Network = &backend.SandboxNetwork{All: s.Network.All, Ports: slices.Clone(s.Network.Ports)}
	}
	return &out
}
