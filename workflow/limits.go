package workflow

import (
	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// limits reads an agent's limits: {pids, memory, cpu}, each value read by
// backend's one parser of it (the daemon's --run-limits uses the same).
func (p *parser) limits(n *yaml.Node, agent string) *backend.RunLimits {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "limits must be a map, e.g. limits: {pids: 1024, memory: 2G, cpu: 1.5}")
		return nil
	}
	fs := p.fields(n, "in limits of agent "+agent, backend.LimitKeys...)
	l := &backend.RunLimits{}
	for _, key := range backend.LimitKeys {
		v := fs[key]
		if isNull(v) {
			continue
		}
		if s := p.str(v, "limits "+key); s != "" {
			if err := l.SetLimit(key, s); err != nil {
				p.add(v, "%v", err)
			}
		}
	}
	return l
}
