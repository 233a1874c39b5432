package skill

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/internal/yamlerr"
	"github.com/agent-worker/agent-worker/internal/yamlnode"
	"github.com/agent-worker/agent-worker/workflow"
)

// MaxFileBytes bounds a SKILL.md: it is read whole and parts of it go into
// every prompt of an effort.
const MaxFileBytes = 1 << 20

// MaxNameLen is the longest skill name, as in the common SKILL.md format.
const MaxNameLen = 64

// maxDescription is the common format's limit on a description.
const maxDescription = 1024

var (
	// nameRE is a skill or phase name: lowercase letters and digits in
	// words joined by single hyphens (the common format's rule).
	nameRE      = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	fieldRE     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	kindRE      = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	toolRE      = regexp.MustCompile(`^[A-Za-z0-9_.*?-]+$`)
	directiveRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// The keys of the front matter. ourKeys are read; foreignKeys belong to
// other tools that read SKILL.md files (Claude Code, Codex, Gemini CLI)
// and are ignored; any other key is ignored too, unless it is close enough
// to one of ours to be a misspelling of it.
var (
	ourKeys     = []string{"name", "description", "phases", "next", "directives", "heartbeat"}
	foreignKeys = []string{"license", "allowed-tools", "metadata", "compatibility", "model", "version",
		"disable-model-invocation", "user-invocable", "argument-hint", "when_to_use", "hooks", "context", "agent", "tags"}
	phaseKeys     = []string{"name", "instructions", "tools", "proof", "evidence", "artifacts", "heartbeat"}
	heartbeatKeys = []string{"every"}
	toolsKeys     = []string{"allow", "deny"}
	evidenceKeys  = []string{"shell", "file", "tool", "exit"}
	longProof     = []string{"type", "description", "optional"}
)

// Load reads and parses the skill file at path.
func Load(path string) (*Skill, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > MaxFileBytes {
		return nil, workflow.Problems{{File: path, Msg: fmt.Sprintf("skill file is %d bytes; at most %d", info.Size(), MaxFileBytes)}}
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, content)
}

// Parse reads a skill from content. path names the file in messages (and
// becomes Skill.Path); it may be "" for content with no file. Every problem
// comes back at once as workflow.Problems, each at its line and column in
// the whole file: the front matter begins on line 2.
func Parse(path string, content []byte) (*Skill, error) {
	p := &parser{file: path}
	s := &Skill{}
	if path == "" {
		p.file = "<skill>"
	} else if abs, err := filepath.Abs(path); err == nil {
		s.Path = abs
	}
	p.parse(s, string(content))
	if len(p.probs) > 0 {
		slices.SortStableFunc(p.probs, func(a, b workflow.Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, p.probs
	}
	for i, ph := range s.Phases {
		ph.Index, ph.skill = i, s
	}
	return s, nil
}

type parser struct {
	file  string
	off   int      // lines before the front matter's first
	lines []string // the file's lines, to place a {{…}} in a long text
	probs workflow.Problems
}

func (p *parser) add(n *yaml.Node, format string, args ...any) {
	p.addAt(n.Line+p.off, n.Column, format, args...)
}

func (p *parser) addAt(line, col int, format string, args ...any) {
	p.probs = append(p.probs, workflow.Problem{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

const example = "---\nname: implement\ndescription: plan, test first, implement, verify\nphases:\n  - name: plan\n    instructions: Write the plan.\n---"

func (p *parser) parse(s *Skill, content string) {
	content = strings.TrimPrefix(content, "\ufeff")
	p.lines = strings.Split(content, "\n")
	if strings.TrimRight(p.lines[0], " \t\r") != "---" {
		p.addAt(1, 1, "a skill file begins with YAML front matter between two --- lines, e.g.\n%s", example)
		return
	}
	end := -1
	for i := 1; i < len(p.lines); i++ {
		if strings.TrimRight(p.lines[i], " \t\r") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		p.addAt(1, 1, "the front matter that begins here is not closed: end it with a line of three dashes (---) before the Markdown body")
		return
	}
	p.off = 1
	front := strings.Join(p.lines[1:end], "\n")
	s.Body = strings.TrimLeft(strings.Join(p.lines[end+1:], "\n"), "\r\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		syn := yamlerr.Syntax(err, []byte(front))
		p.addAt(max(syn.Line, 1)+p.off, 0, "invalid YAML: %s", syn.Msg)
		return
	}
	if len(doc.Content) == 0 || deref(doc.Content[0]).Kind != yaml.MappingNode {
		p.addAt(2, 1, "the front matter must be a mapping with name, description and phases, e.g.\n%s", example)
		return
	}
	root := deref(doc.Content[0])
	top := map[string]*yaml.Node{}
	for _, e := range p.entries(root, "in the front matter") {
		switch {
		case slices.Contains(ourKeys, e.Key):
			top[e.Key] = e.V
		case slices.Contains(foreignKeys, e.Key):
		default:
			if best := workflow.Closest(e.Key, ourKeys); best != "" {
				p.add(e.K, "unknown key %q in the front matter: did you mean %s? (keys of other tools, such as license or metadata, are ignored)", e.Key, best)
			}
		}
	}
	s.Name = p.name(root, top["name"], "skill")
	s.Description = p.str(top["description"], "description")
	switch {
	case isNull(top["description"]) || top["description"].Kind == yaml.ScalarNode && strings.TrimSpace(s.Description) == "":
		p.add(keyOr(root, "description", root), "description is missing: say in one line what the skill is for and when to use it")
	case utf8.RuneCountInString(s.Description) > maxDescription:
		p.add(top["description"], "description is %d characters; at most %d", utf8.RuneCountInString(s.Description), maxDescription)
	}
	s.Phases = p.phases(root, top["phases"])
	s.Next = p.nameList(top["next"], "next", "skill")
	s.Directives = p.directives(top["directives"])
	s.Heartbeat = p.heartbeat(top["heartbeat"], "the skill's")
	var kinds []string
	for _, ph := range s.Phases {
		kinds = append(kinds, ph.Artifacts...)
	}
	p.checkRefs(s.Body, nil, end+2, kinds, "")
}

// The YAML node helpers, shared with the workflow parser.
var (
	deref  = yamlnode.Deref
	isNull = yamlnode.IsNull
)

// entries lists a mapping's pairs in file order, reporting duplicate keys
// at their line in the whole file.
func (p *parser) entries(n *yaml.Node, where string) []yamlnode.Entry {
	return yamlnode.Entries(n, where, p.off, p.add)
}

// fields returns a mapping's values by key; a key not in known is an error
// naming the closest known one.
func (p *parser) fields(n *yaml.Node, where string, known ...string) map[string]*yaml.Node {
	m := map[string]*yaml.Node{}
	for _, e := range p.entries(n, where) {
		if !slices.Contains(known, e.Key) {
			if best := workflow.Closest(e.Key, known); best != "" {
				p.add(e.K, "unknown key %q %s: did you mean %s?", e.Key, where, best)
			} else {
				p.add(e.K, "unknown key %q %s: known keys are %s", e.Key, where, strings.Join(known, ", "))
			}
			continue
		}
		m[e.Key] = e.V
	}
	return m
}

// keyOr is the key node of name in mapping n (for its line), or def.
func keyOr(n *yaml.Node, name string, def *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return def
}

// str reads an optional scalar; null and absent read as "".
func (p *parser) str(n *yaml.Node, what string) string {
	if isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.add(n, "%s must be text, not a list or map", what)
		return ""
	}
	return n.Value
}

// CheckName says what is wrong with a skill or phase name, or returns nil:
// the one definition of a name, shared with the common SKILL.md format
// (lowercase letters and digits, words joined by single hyphens, at most
// 64 characters).
func CheckName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty: use lowercase letters and digits, words joined by single hyphens, e.g. test-first", kind)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Errorf("%s name %s is %d characters; at most %d", kind, workflow.Quote(name), utf8.RuneCountInString(name), MaxNameLen)
	case !nameRE.MatchString(name):
		hint := ""
		if lower := strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(name)); nameRE.MatchString(lower) {
			hint = fmt.Sprintf(" (%s would do)", lower)
		}
		return fmt.Errorf("%s name %s is not valid: use lowercase letters and digits, words joined by single hyphens%s", kind, workflow.Quote(name), hint)
	}
	return nil
}

// name reads a required name at n, reporting its absence at parent.
func (p *parser) name(parent, n *yaml.Node, kind string) string {
	if isNull(n) {
		p.add(keyOr(parent, "name", parent), "%s name is missing: add name: with lowercase letters, digits and -", kind)
		return ""
	}
	v := p.str(n, kind+" name")
	if v == "" && n.Kind != yaml.ScalarNode {
		return ""
	}
	if err := CheckName(kind, v); err != nil {
		p.add(n, "%v", err)
		return ""
	}
	return v
}

// list reads an optional list of scalars, each with its node.
func (p *parser) list(n *yaml.Node, what, eg string) ([]string, []*yaml.Node) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "%s must be a list, e.g. %s", what, eg)
		return nil, nil
	}
	var out []string
	var nodes []*yaml.Node
	for _, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.ScalarNode || isNull(item) {
			p.add(item, "each entry of %s must be a single value, e.g. %s", what, eg)
			continue
		}
		out = append(out, item.Value)
		nodes = append(nodes, item)
	}
	return out, nodes
}

func (p *parser) nameList(n *yaml.Node, what, kind string) []string {
	items, nodes := p.list(n, what, what+": [review]")
	var out []string
	for i, v := range items {
		if err := CheckName(kind, v); err != nil {
			p.add(nodes[i], "%s: %v", what, err)
			continue
		}
		out = append(out, v)
	}
	return out
}

func (p *parser) directives(n *yaml.Node) []string {
	items, nodes := p.list(n, "directives", "directives: [AGENTS.md, INVARIANTS.md]")
	var out []string
	for i, v := range items {
		if !directiveRE.MatchString(v) || v == "." || v == ".." {
			p.add(nodes[i], "directive %s must be a file name without a directory, e.g. AGENTS.md (it is looked for in each directory the agent touches)", workflow.Quote(v))
			continue
		}
		out = append(out, v)
	}
	return out
}

func (p *parser) phases(root, n *yaml.Node) []*Phase {
	const eg = "phases: [{name: plan, instructions: Write the plan.}]"
	if isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		at := keyOr(root, "phases", root)
		p.add(at, "a skill needs at least one phase, e.g. %s", eg)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "phases must be a list, e.g. %s", eg)
		return nil
	}
	var out []*Phase
	seen := map[string]int{}
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each phase must be a map with a name, e.g. {name: plan, instructions: Write the plan.}")
			continue
		}
		label := fmt.Sprintf("phase %d", i+1)
		if k := keyOr(item, "name", nil); k != nil {
			if v := deref(item.Content[slices.Index(item.Content, k)+1]); v.Kind == yaml.ScalarNode && nameRE.MatchString(v.Value) {
				label = "phase " + v.Value
			}
		}
		fs := p.fields(item, "in "+label, phaseKeys...)
		ph := &Phase{Name: p.name(item, fs["name"], "phase")}
		if ph.Name != "" {
			if line, dup := seen[ph.Name]; dup {
				p.add(fs["name"], "phase %s is named twice (first at line %d): give each phase its own name", ph.Name, line)
			}
			seen[ph.Name] = fs["name"].Line + p.off
		}
		where := label
		ph.Instructions = p.str(fs["instructions"], where+" instructions")
		ph.Tools = p.tools(fs["tools"], where)
		ph.Proof = p.proof(fs["proof"], where)
		ph.Evidence = p.evidence(fs["evidence"], where)
		ph.Artifacts = p.artifacts(fs["artifacts"], where)
		ph.Heartbeat = p.heartbeat(fs["heartbeat"], where)
		if n := fs["instructions"]; n != nil && n.Kind == yaml.ScalarNode {
			p.checkRefs(ph.Instructions, n, 0, ph.Artifacts, where)
		}
		out = append(out, ph)
	}
	return out
}

// heartbeat reads a heartbeat key, the skill's or a phase's:
// {every: N}, N a whole number from 0 (off) to MaxHeartbeatEvery.
func (p *parser) heartbeat(n *yaml.Node, where string) *Heartbeat {
	const eg = "heartbeat: {every: 20}"
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s heartbeat must be a map with every: the number of tool calls allowed between two effort log entries, e.g. %s", where, eg)
		return nil
	}
	fs := p.fields(n, "in "+where+" heartbeat", heartbeatKeys...)
	every := fs["every"]
	if isNull(every) {
		if len(n.Content) > 0 {
			return nil // its keys were reported
		}
		p.add(n, "%s heartbeat has no every: give the number of tool calls allowed between two effort log entries, e.g. %s (0 turns it off)", where, eg)
		return nil
	}
	h := &Heartbeat{}
	if every.Kind != yaml.ScalarNode || every.Tag != "!!int" || every.Decode(&h.Every) != nil || h.Every < 0 || h.Every > MaxHeartbeatEvery {
		p.add(every, "%s heartbeat every must be a whole number from 0 (off) to %d, not %s", where, MaxHeartbeatEvery, workflow.Quote(every.Value))
		return nil
	}
	return h
}

func (p *parser) tools(n *yaml.Node, where string) *Tools {
	const eg = `tools: {deny: [write_file, "shell:git commit*"]}`
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s tools must be a map of allow and deny lists, e.g. %s", where, eg)
		return nil
	}
	fs := p.fields(n, "in "+where+" tools", toolsKeys...)
	t := &Tools{Restricted: fs["allow"] != nil}
	t.Allow = p.rules(fs["allow"], where+" tools allow")
	t.Deny = p.rules(fs["deny"], where+" tools deny")
	return t
}

// rules reads an allow or deny list.
func (p *parser) rules(n *yaml.Node, what string) []Rule {
	items, nodes := p.list(n, what, `[write_file, "doc_*", "shell:go test *"]`)
	out := []Rule{}
	for i, v := range items {
		r, err := ParseRule(v)
		if err != nil {
			p.add(nodes[i], "%s: %v", what, err)
			continue
		}
		out = append(out, r)
	}
	return out
}

// claudeRuleRE is Claude Code's permission rule for its shell, Bash(cmd:*).
var claudeRuleRE = regexp.MustCompile(`^Bash\((.*?)(:\*)?\)$`)

// ParseRule reads one entry of a tools allow or deny list: shell:GLOB, a
// glob over the commands of the shell tools, or a tool name or a glob over
// tool names (letters, digits, _ . - and the wildcards * ?).
func ParseRule(s string) (Rule, error) {
	if glob, ok := strings.CutPrefix(s, "shell:"); ok {
		glob = strings.Join(strings.Fields(glob), " ")
		if glob == "" {
			return Rule{}, fmt.Errorf("%s has no command: write shell: and a glob over commands, e.g. \"shell:go test *\"", workflow.Quote(s))
		}
		return Rule{Text: "shell:" + glob, Shell: true, Pattern: glob}, nil
	}
	if m := claudeRuleRE.FindStringSubmatch(s); m != nil {
		glob := m[1]
		if m[2] != "" {
			glob += "*"
		}
		return Rule{}, fmt.Errorf("%s is Claude Code's form: write \"shell:%s\", which holds for every backend's shell", workflow.Quote(s), glob)
	}
	if prefix, _, ok := strings.Cut(s, ":"); ok {
		hint := "the only prefix is shell: (a glob over shell commands)"
		if workflow.Closest(prefix, []string{"shell"}) != "" {
			hint = "did you mean shell:?"
		}
		return Rule{}, fmt.Errorf("%s is not a tool name: %s", workflow.Quote(s), hint)
	}
	if !toolRE.MatchString(s) {
		return Rule{}, fmt.Errorf("%s is not a tool name or glob: use letters, digits, _ . - and the wildcards * and ?; a shell command is written shell:GLOB", workflow.Quote(s))
	}
	return Rule{Text: s, Pattern: ToolName(s)}, nil
}

func (p *parser) proof(n *yaml.Node, where string) []ProofField {
	const eg = "proof: {plan_summary: string, tests: {type: int, optional: true}}"
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s proof must be a map of field names to types, e.g. %s", where, eg)
		return nil
	}
	var out []ProofField
	for _, e := range p.entries(n, "in "+where+" proof") {
		f := ProofField{Name: e.Key}
		if !fieldRE.MatchString(e.Key) || len(e.Key) > MaxNameLen {
			p.add(e.K, "proof field %s is not a valid name: use lowercase letters, digits and _, beginning with a letter", workflow.Quote(e.Key))
		}
		typ := e.V
		switch {
		case e.V.Kind == yaml.MappingNode:
			fs := p.fields(e.V, "in proof field "+e.Key, longProof...)
			typ = fs["type"]
			if typ == nil {
				p.add(e.V, "proof field %s has no type: add type: with one of %s", e.Key, typeList())
				continue
			}
			f.Description = p.str(fs["description"], "description")
			if o := fs["optional"]; !isNull(o) {
				if o.Kind != yaml.ScalarNode || o.Decode(&f.Optional) != nil {
					p.add(o, "optional must be true or false")
				}
			}
		case e.V.Kind != yaml.ScalarNode:
			p.add(e.V, "proof field %s must be a type (%s) or a map such as {type: string, description: ..., optional: true}", e.Key, typeList())
			continue
		}
		f.Type = ProofType(typ.Value)
		if typ.Kind != yaml.ScalarNode || !slices.Contains(ProofTypes, f.Type) {
			msg := fmt.Sprintf("proof field %s has unknown type %s: ", e.Key, workflow.Quote(typ.Value))
			if best := workflow.Closest(typ.Value, typeStrings()); best != "" {
				msg += "did you mean " + best + "?"
			} else {
				msg += "use one of " + typeList()
			}
			p.add(typ, "%s", msg)
			continue
		}
		out = append(out, f)
	}
	return out
}

func typeStrings() []string {
	out := make([]string, len(ProofTypes))
	for i, t := range ProofTypes {
		out[i] = string(t)
	}
	return out
}

func typeList() string { return strings.Join(typeStrings(), ", ") }

func (p *parser) evidence(n *yaml.Node, where string) []Evidence {
	const eg = `evidence: [{shell: "go test ./...", exit: 0}, {file: "*_test.go"}, {tool: channel_send}]`
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "%s evidence must be a list, e.g. %s", where, eg)
		return nil
	}
	var out []Evidence
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each evidence entry must be a map with one of shell, file or tool, e.g. {shell: \"go test ./...\", exit: 0}")
			continue
		}
		fs := p.fields(item, fmt.Sprintf("in %s evidence %d", where, i+1), evidenceKeys...)
		var kinds []EvidenceKind
		for _, k := range []EvidenceKind{EvidenceShell, EvidenceFile, EvidenceTool} {
			if fs[string(k)] != nil {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) != 1 {
			msg := "has none"
			if len(kinds) > 1 {
				msg = fmt.Sprintf("has %d (%s)", len(kinds), joinKinds(kinds))
			}
			p.add(item, "an evidence entry needs exactly one of shell, file or tool; this one %s: write one entry for each", msg)
			continue
		}
		e := Evidence{Kind: kinds[0]}
		v := fs[string(e.Kind)]
		e.Pattern = strings.TrimSpace(p.str(v, string(e.Kind)))
		if e.Pattern == "" {
			if v.Kind == yaml.ScalarNode {
				p.add(v, "%s needs a glob, e.g. %s", e.Kind, eg)
			}
			continue
		}
		switch e.Kind {
		case EvidenceShell:
			e.Pattern = strings.Join(strings.Fields(e.Pattern), " ")
		case EvidenceTool:
			if !toolRE.MatchString(e.Pattern) {
				p.add(v, "tool %s is not a tool name or glob: use letters, digits, _ . - and the wildcards * and ?", workflow.Quote(e.Pattern))
				continue
			}
			e.Pattern = ToolName(e.Pattern)
		case EvidenceFile:
			if strings.HasPrefix(e.Pattern, "/") || slices.Contains(strings.Split(e.Pattern, "/"), "..") {
				p.add(v, "file %s must be a glob relative to the effort's directory, without .. or a leading /", workflow.Quote(e.Pattern))
				continue
			}
		}
		if x := fs["exit"]; !isNull(x) {
			switch {
			case e.Kind != EvidenceShell:
				p.add(x, "exit belongs to shell evidence; a %s entry has none", e.Kind)
				continue
			case x.Kind == yaml.ScalarNode && x.Value == "any":
				e.AnyExit = true
			case x.Kind != yaml.ScalarNode || x.Decode(&e.Exit) != nil || e.Exit < 0 || e.Exit > 255:
				p.add(x, "exit must be an exit status from 0 to 255, or any")
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

func joinKinds(ks []EvidenceKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func (p *parser) artifacts(n *yaml.Node, where string) []string {
	items, nodes := p.list(n, where+" artifacts", "artifacts: [plan, log]")
	var out []string
	for i, v := range items {
		switch {
		case !kindRE.MatchString(v):
			p.add(nodes[i], "artifact kind %s is not valid: use one lowercase word such as debrief, log or plan", workflow.Quote(v))
		case slices.Contains(out, v):
			p.add(nodes[i], "artifact kind %s is listed twice in %s", v, where)
		default:
			out = append(out, v)
		}
	}
	return out
}

// checkRefs checks the {{artifact KIND}} references of text: each must
// name one of kinds, the artifacts of phase (or, for the skill's body,
// phase "", of any phase). text is the value of node n or, when n is nil,
// the lines of the file from line first on. A {{word …}} whose word is a
// misspelling of artifact is an error too; any other {{…}} is left alone,
// as text of the instructions.
func (p *parser) checkRefs(text string, n *yaml.Node, first int, kinds []string, phase string) {
	where, owner := "the skill's body", "no phase"
	if phase != "" {
		where, owner = "the instructions of "+phase, phase
	}
	for _, m := range artifactRE.FindAllStringSubmatch(text, -1) {
		ref, word, kind := m[0], m[1], m[2]
		line, col := p.place(ref, n, first)
		switch {
		case word != "artifact":
			if workflow.Closest(word, []string{"artifact"}) != "" {
				p.addAt(line, col, "%s in %s: did you mean {{artifact %s}}?", ref, where, kind)
			}
		case slices.Contains(kinds, kind):
		case phase == "":
			p.addAt(line, col, "%s in %s names an artifact %s declares: add %s to the artifacts of the phase that writes it", ref, where, owner, kind)
		default:
			msg := fmt.Sprintf("%s in %s names an artifact %s does not declare", ref, where, owner)
			if best := workflow.Closest(kind, kinds); best != "" {
				msg += ": did you mean {{artifact " + best + "}}?"
			} else if len(kinds) == 0 {
				msg += ": add artifacts: [" + kind + "] to the phase"
			} else {
				msg += fmt.Sprintf(" (it declares %s): add %s to its artifacts", strings.Join(kinds, ", "), kind)
			}
			p.addAt(line, col, "%s", msg)
		}
	}
}

// place finds ref in the file: from the line of node n (or line first when
// n is nil) on, the first line that holds it; the node itself when no line
// does (a folded string whose reference spans two lines).
func (p *parser) place(ref string, n *yaml.Node, first int) (line, col int) {
	start := first
	if n != nil {
		start = n.Line + p.off
	}
	for i := start; i >= 1 && i <= len(p.lines); i++ {
		if c := strings.Index(p.lines[i-1], ref); c >= 0 {
			return i, utf8.RuneCountInString(p.lines[i-1][:c]) + 1
		}
	}
	if n != nil {
		return n.Line + p.off, n.Column
	}
	return first, 0
}
