package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// ParseTimeout reads an agent config's timeout: a Go duration ("10m", as
// workflow files store it) or a number of seconds.
func ParseTimeout(raw json.RawMessage) (time.Duration, error) {
	var s string
	var secs float64
	var d time.Duration
	switch {
	case json.Unmarshal(raw, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
	case json.Unmarshal(raw, &secs) == nil:
		d = time.Duration(secs * float64(time.Second))
	default:
		return 0, fmt.Errorf("%s is neither a duration like \"10m\" nor seconds", raw)
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

// MCPServer is one of an agent's own MCP servers, as workflow files write
// it under mcp_servers: a command (stdio) or a URL (HTTP).
type MCPServer struct {
	Command []string          `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// OwnServers merges the agent's own MCP servers from the run request and
// from its config (the request wins a name), checking each has exactly one
// of command and url. The daemon's own server is not among them.
func OwnServers(req backend.Request, fromConfig map[string]MCPServer) (map[string]MCPServer, error) {
	out := map[string]MCPServer{}
	for name, s := range fromConfig {
		out[name] = s
	}
	for _, s := range req.MCPServers {
		out[s.Name] = MCPServer{Command: s.Command, URL: s.URL, Env: s.Env, Headers: s.Headers}
	}
	if err := CheckServers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckServers reports the first server (by name) that does not have
// exactly one of command and url; a config mistake, so permanent.
func CheckServers(servers map[string]MCPServer) error {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if s := servers[name]; (s.URL == "") == (len(s.Command) == 0) {
			return backend.Permanent(fmt.Errorf("mcp server %s needs either url or command", name))
		}
	}
	return nil
}

// Settings are the agent config keys every CLI backend reads; a backend's
// config struct embeds it beside its own keys.
type Settings struct {
	CLI        string               `json:"cli"`
	Timeout    json.RawMessage      `json:"timeout"`
	Env        map[string]string    `json:"env"`
	MCPServers map[string]MCPServer `json:"mcp_servers"`
	// Idle is Timeout parsed, or the backend's default when unset.
	Idle time.Duration `json:"-"`
}

// Decode reads an agent's config into dst, a struct that embeds s, and
// checks the shared keys. A config that cannot be read is the user's
// mistake, so errors are permanent and name the backend.
func Decode(name string, raw json.RawMessage, idle time.Duration, dst any, s *Settings) error {
	s.Idle = idle
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, dst); err != nil {
			return backend.Permanent(fmt.Errorf("%s: config: %w", name, err))
		}
	}
	if len(s.Timeout) > 0 && string(s.Timeout) != "null" {
		d, err := ParseTimeout(s.Timeout)
		if err != nil {
			return backend.Permanent(fmt.Errorf("%s: config: timeout: %w", name, err))
		}
		s.Idle = d
	}
	if err := CheckServers(s.MCPServers); err != nil {
		return fmt.Errorf("%s: config: %w", name, err)
	}
	return nil
}

// mcpEntry is one server in the mcpServers file Claude Code and Cursor
// read: url (+ headers) for a remote server, command + args (+ env) for a
// local one; Claude Code also wants the type.
type mcpEntry struct {
	Type    string            `json:"type,omitempty"` // http or stdio
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// MCPConfig renders that file: the daemon under daemonName with the run's
// token, plus the agent's own servers (from the request and its config).
// typed adds each server's type, as Claude Code wants. The daemon's entry
// always wins its name, so no config can swap the run's token or server.
func MCPConfig(req backend.Request, fromConfig map[string]MCPServer, daemonName string, typed bool) ([]byte, error) {
	own, err := OwnServers(req, fromConfig)
	if err != nil {
		return nil, err
	}
	kind := func(k string) string {
		if typed {
			return k
		}
		return ""
	}
	servers := map[string]mcpEntry{}
	for name, s := range own {
		if len(s.Command) > 0 {
			servers[name] = mcpEntry{Type: kind("stdio"), Command: s.Command[0], Args: s.Command[1:], Env: s.Env}
		} else {
			servers[name] = mcpEntry{Type: kind("http"), URL: s.URL, Headers: s.Headers}
		}
	}
	servers[daemonName] = mcpEntry{Type: kind("http"), URL: req.Daemon.URL, Headers: req.Daemon.Headers}
	return json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
}
