package workflow

import "encoding/json"

// ConfigJSON is the object the daemon stores as the agent's backend config:
// the keys of `config:` at the top level (so the mock backend finds its
// script directly), plus max_steps, timeout (a Go duration string),
// mcp_servers (by name), env, tools and provider when they are set. Parse rejects
// a `config:` key that would collide with these.
func (a Agent) ConfigJSON() json.RawMessage {
	obj := map[string]any{}
	var top map[string]json.RawMessage
	if json.Unmarshal(a.Config, &top) == nil {
		for k, v := range top {
			obj[k] = v
		}
	}
	if a.MaxSteps > 0 {
		obj["max_steps"] = a.MaxSteps
	}
	if a.Timeout > 0 {
		obj["timeout"] = a.Timeout.String()
	}
	if len(a.MCPServers) > 0 {
		servers := map[string]mcpServerJSON{}
		for _, s := range a.MCPServers {
			servers[s.Name] = mcpServerJSON{Command: s.Command, URL: s.URL, Env: s.Env, Headers: s.Headers}
		}
		obj["mcp_servers"] = servers
	}
	if len(a.Env) > 0 {
		obj["env"] = a.Env
	}
	if a.Tools != nil {
		obj["tools"] = a.Tools // [] too: no tools
	}
	if p := a.Provider; p != nil {
		obj["provider"] = providerJSON{Name: p.Name, BaseURL: p.BaseURL, APIKeyEnv: p.APIKeyEnv}
	}
	b, err := json.Marshal(obj)
	if err != nil { // only strings, numbers and valid JSON go in
		panic("workflow: marshal agent config: " + err.Error())
	}
	return b
}

type mcpServerJSON struct {
	Command []string          `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

type providerJSON struct {
	Name      string `json:"name"`
	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}
