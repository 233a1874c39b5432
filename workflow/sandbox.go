package workflow

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// sandboxExample is a whole sandbox:, for messages that show what to write.
const sandboxExample = "sandbox: {read: [~/.cache/go-build], write: [./out], network: [443], mode: on}"

// sandboxKeys are the keys of an agent's sandbox:.
var sandboxKeys = []string{"read", "write", "network", "mode"}

// sandbox reads an agent's sandbox: policy. Its paths are made absolute
// here, against the workflow file's folder and the user's home, so the
// daemon stores the same paths whatever its own working directory.
func (p *parser) sandbox(n *yaml.Node, agent string) *backend.SandboxConfig {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "sandbox must be a map, e.g. %s (codex's own sandbox mode goes in config: {sandbox_mode: read-only})", sandboxExample)
		return nil
	}
	fs := p.fields(n, "in sandbox of agent "+agent, sandboxKeys...)
	s := &backend.SandboxConfig{
		Read:    p.sandboxPaths(fs["read"], "read"),
		Write:   p.sandboxPaths(fs["write"], "write"),
		Network: p.sandboxNetwork(fs["network"]),
	}
	if m := fs["mode"]; !isNull(m) {
		switch mode := p.str(m, "sandbox mode"); mode {
		case backend.SandboxOn, backend.SandboxOff:
			s.Mode = mode
		case "":
		default:
			p.add(m, "sandbox mode %q is not valid: write mode: on (the default) or mode: off to run the agent unconfined", mode)
		}
	}
	return s
}

// sandboxPaths reads the list under read: or write:, each path cleaned
// and absolute, once each.
func (p *parser) sandboxPaths(n *yaml.Node, key string) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "sandbox %s must be a list of paths, e.g. %s: [./data, ~/.cache]", key, key)
		return nil
	}
	var out []string
	for _, item := range n.Content {
		item = deref(item)
		// YAML reads a bare ~ as null; in a list of paths it is the home.
		if item.Kind != yaml.ScalarNode || isNull(item) && item.Value != "~" {
			p.add(item, "sandbox %s items must be paths, e.g. %s: [./data, ~/.cache]", key, key)
			continue
		}
		if path := p.sandboxPath(item, key); path != "" && !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out
}

// sandboxPath resolves one path: ~ and ~/x are the user's home, a relative
// path is taken from the workflow file's folder. ${{ }} variables are not
// filled in: a sandbox is checked when the file loads, before any setup
// step or param has a value.
func (p *parser) sandboxPath(n *yaml.Node, key string) string {
	path := n.Value
	switch {
	case strings.TrimSpace(path) == "":
		p.add(n, "sandbox %s path is empty: write a path, e.g. ./data or ~/.cache", key)
		return ""
	case strings.Contains(path, "${{"):
		p.add(n, "sandbox %s path %q takes no ${{ }} variables: write the path itself, relative to the workflow file's folder, ~/... or absolute", key, path)
		return ""
	case path == "~" || strings.HasPrefix(path, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			p.add(n, "sandbox %s path %q: the home directory is unknown (%v): write an absolute path", key, path, err)
			return ""
		}
		path = filepath.Join(home, path[1:])
	case strings.HasPrefix(path, "~"):
		p.add(n, "sandbox %s path %q: only your own home expands: write ~/path or an absolute path", key, path)
		return ""
	case !filepath.IsAbs(path):
		path = filepath.Join(p.dir, path)
	}
	return filepath.Clean(path)
}

// sandboxNetwork reads network: none, all or a list of TCP ports; absent
// is nil, which means none as well.
func (p *parser) sandboxNetwork(n *yaml.Node) *backend.SandboxNetwork {
	const want = "write none, all or a list of TCP ports (1-65535), e.g. network: [443, 8080]"
	switch {
	case isNull(n):
		return nil
	case n.Kind == yaml.ScalarNode && n.Value == "none":
		return &backend.SandboxNetwork{}
	case n.Kind == yaml.ScalarNode && n.Value == "all":
		return &backend.SandboxNetwork{All: true}
	case n.Kind != yaml.SequenceNode:
		p.add(n, "sandbox network %s is not valid: %s", describe(n), want)
		return nil
	}
	out := &backend.SandboxNetwork{}
	for _, item := range n.Content {
		item = deref(item)
		var port int
		if item.Kind != yaml.ScalarNode || item.Tag != "!!int" || item.Decode(&port) != nil || port < 1 || port > math.MaxUint16 {
			p.add(item, "sandbox network: %s is not a TCP port: %s", describe(item), want)
			continue
		}
		if !slices.Contains(out.Ports, uint16(port)) {
			out.Ports = append(out.Ports, uint16(port))
		}
	}
	return out
}

// describe quotes a scalar for a message, or names a list or map.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	}
	return Quote(n.Value)
}
