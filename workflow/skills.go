package workflow

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AgentEffort is an agent's effort: key, the effort its first run starts
// when it has none: the skill walked and the directory it works on.
type AgentEffort struct {
	// Dir is absolute once parsed (a relative one is taken from the
	// workflow file's directory).
	Dir   string
	Skill string
	Line  int
}

// skillsFolders reads the top-level skills: key, the folders (relative to
// the file) searched first for skills, before the project's and the
// user's; they come back absolute and clean.
func (p *parser) skillsFolders(n *yaml.Node) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "skills must be a list of folders, e.g. skills: [skills, ../shared/skills]")
		return nil
	}
	var out []string
	for _, item := range n.Content {
		item = deref(item)
		s := strings.TrimSpace(p.str(item, "skills items"))
		if s == "" {
			if item.Kind == yaml.ScalarNode {
				p.add(item, "skills: an empty folder name: give a path, e.g. skills: [skills]")
			}
			continue
		}
		if strings.Contains(s, "${{") {
			p.add(item, "skills: folders are taken as written, without ${{ }} variables")
			continue
		}
		out = append(out, p.abs(s))
	}
	return out
}

// abs anchors path at the workflow file's directory.
func (p *parser) abs(path string) string {
	if strings.HasPrefix(path, "~/") {
		return path // the daemon expands the user's home
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	if a, err := filepath.Abs(path); err == nil {
		path = a
	}
	return filepath.Clean(path)
}

// agentEffort reads an agent's effort: {dir, skill}.
func (p *parser) agentEffort(n *yaml.Node, agent string) *AgentEffort {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "effort must be a map, e.g. effort: {dir: ., skill: implement}")
		return nil
	}
	fs := p.fields(n, "in agent "+agent+" effort", "dir", "skill")
	e := &AgentEffort{Line: n.Line, Skill: strings.TrimSpace(p.str(fs["skill"], "skill"))}
	dir := strings.TrimSpace(p.str(fs["dir"], "dir"))
	switch {
	case isNull(fs["skill"]) || e.Skill == "":
		p.add(n, "effort needs skill: the skill the agent walks, e.g. effort: {dir: ., skill: implement}")
		return nil
	case isNull(fs["dir"]) || dir == "":
		p.add(n, "effort needs dir: the directory the agent works on, e.g. effort: {dir: ., skill: implement}")
		return nil
	case strings.Contains(dir, "${{") || strings.Contains(e.Skill, "${{"):
		p.add(n, "effort: dir and skill are taken as written, without ${{ }} variables")
		return nil
	}
	e.Dir = p.abs(dir)
	return e
}
