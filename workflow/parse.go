package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/internal/yamlerr"
	"github.com/agent-worker/agent-worker/internal/yamlnode"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

var (
	pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	paramNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	mcpNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	identRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	shortRE      = regexp.MustCompile(`^[A-Za-z0-9]$`)
	// bodyPathRE is the path of ${{ body.PATH }}: object keys and array
	// indexes joined by dots.
	bodyPathRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
)

const defaultSetupTimeout = 60 * time.Second

// A setup variable may not shadow a variable namespace.
var (
	reservedAs = []string{"env", "workflow", "params", "source"}
	// configOwned are the keys BackendConfig sets from the agent's own fields.
	configOwned = backend.ConfigKeys
	agentKeys   = []string{"backend", "model", "system_prompt", "schedule", "wakeup", "wakeup_prompt",
		"max_steps", "timeout", "mcp_servers", "env", "provider", "tools", "sandbox", "config", "budget", "can_spawn", "max_spawned", "approvals", "approval_timeout", "limits", "effort", "roles"}
)

// WorkspaceTools are the tool sets an agent's `tools:` may list: the sdk
// backend's file and shell tools in the agent's working directory
// (plugins/direct keeps the same names).
var WorkspaceTools = []string{"read", "write", "list", "search", "shell"}

// cliBackends bring their CLI's own tools, which `tools:` cannot switch.
var cliBackends = []string{"claude", "codex", "cursor", "acp", "gemini", "claude-acp", "codex-acp", "opencode"}

// Parse reads a workflow from content. path names the file in messages,
// gives the default name and anchors relative paths; it may be "" for content
// with no file, and then relative paths are taken from the current directory.
// Every problem in the file comes back at once as Problems, those of
// opts (a backend the daemon cannot run) included.
func Parse(path string, content []byte, opts ...ParseOption) (*File, error) {
	f := &File{}
	p := &parser{file: path, src: strings.Split(string(content), "\n"), setupAs: map[string]int{}, params: map[string]bool{}}
	for _, o := range opts {
		o(p)
	}
	if path == "" {
		p.file = "<workflow>"
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find the current directory for relative paths: %w", err)
		}
		f.Dir = wd
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("make workflow path absolute: %w", err)
		}
		f.Path, f.Dir = abs, filepath.Dir(abs)
	}
	p.dir = f.Dir
	p.parse(f, content)
	if len(p.probs) > 0 {
		p.probs.sort()
		return nil, p.probs
	}
	return f, nil
}

// A ParseOption adds a check that needs more than the file, such as the
// daemon's installed backends, so its problems come back in the same pass
// as the file's own, each at its line and column.
type ParseOption func(*parser)

// WithBackends checks each agent's backend with check, which gets the word
// as written (BackendName resolves it) and says why the daemon cannot run
// it (host/agents.ResolveBackend), or nil.
func WithBackends(check func(word string) error) ParseOption {
	return func(p *parser) { p.checkBackend = check }
}

// parser walks the YAML node tree, so every value keeps its line and column,
// and collects problems instead of stopping at the first.
type parser struct {
	file    string   // as shown in messages
	dir     string   // anchors relative paths
	src     []string // source lines, to place a variable inside a long string
	probs   Problems
	params  map[string]bool // declared param names
	setupAs map[string]int  // setup `as` name -> step index
	body    bool            // ${{ body.PATH }} is allowed: checking a trigger's message
	// checkBackend says why an agent's backend cannot run; nil: not checked.
	checkBackend func(word string) error
	// explicitIntegrate holds the approvals: policies that set integrate:
	// themselves (see workflowApprovals).
	explicitIntegrate map[*backend.ApprovalPolicy]bool
}

func (p *parser) add(n *yaml.Node, format string, args ...any) {
	p.addAt(n.Line, n.Column, format, args...)
}

func (p *parser) addAt(line, col int, format string, args ...any) {
	p.probs = append(p.probs, Problem{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) parse(f *File, content []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		syn := yamlerr.Syntax(err, content)
		if at, long := p.longKey(syn.Line); long != "" {
			p.addAt(at, 0, "%s", long)
			return
		}
		p.addAt(syn.Line, 0, "invalid YAML: %s", syn.Msg)
		return
	}
	if len(doc.Content) == 0 || deref(doc.Content[0]).Kind != yaml.MappingNode {
		p.addAt(1, 1, "workflow file must be a mapping with an agents: key, e.g. agents: {reviewer: {backend: mock}}")
		return
	}
	root := deref(doc.Content[0])
	top := p.fields(root, "at the top level", "name", "agents", "context", "params", "setup", "kickoff", "loop_guard", "budget", "triggers", "report", "workspace", "approvals", "approval_timeout", "notify", "skills")
	f.Name = p.name(top["name"])
	// Params and setup first: every other string may refer to them.
	f.Params = p.paramList(top["params"])
	f.Setup = p.setupSteps(top["setup"])
	f.Agents = p.agents(root, top["agents"])
	f.Context = p.context(top["context"], f.Agents)
	f.Kickoff = p.str(top["kickoff"], "kickoff")
	p.checkVars(top["kickoff"], f.Kickoff, "", math.MaxInt)
	f.LoopGuard = p.loopGuard(top["loop_guard"])
	f.Budget = p.budget(top["budget"], "budget")
	f.Triggers = p.triggers(top["triggers"], f.Agents)
	f.Report = p.report(top["report"], f.Agents, "report")
	if f.Report != nil && len(f.Triggers) == 0 {
		p.add(top["report"], "report: posts a result back after a webhook delivery, and this workflow has no triggers: add one, e.g. triggers: [%s]", triggerExample)
	}
	f.Notify = p.notify(top["notify"])
	f.Workspace = p.workspace(keyNode(root, "workspace"), top["workspace"])
	p.workflowApprovals(f, top["approvals"], top["approval_timeout"])
	f.Skills = p.skillsFolders(top["skills"])
}

// keyNode is the key node of name in mapping n (for its line), or nil.
func keyNode(n *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
}

// budget reads {usd, tokens, runs, hard}: each limit a number, 0 or more.
func (p *parser) budget(n *yaml.Node, where string) *Budget {
	if isNull(n) {
		return nil
	}
	const example = "budget: {usd: 5, tokens: 2000000, runs: 200}"
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s must be a map, e.g. %s", where, example)
		return nil
	}
	fs := p.fields(n, "in "+where, "usd", "tokens", "runs", "hard")
	b := &Budget{Hard: p.boolean(fs["hard"], "hard")}
	if v := fs["usd"]; !isNull(v) {
		var usd float64
		if v.Kind != yaml.ScalarNode || v.Decode(&usd) != nil || usd < 0 {
			p.add(v, "%s usd must be a number of dollars, 0 or more, e.g. %s", where, example)
		} else {
			b.USD = &usd
		}
	}
	for key, dst := range map[string]**int64{"tokens": &b.Tokens, "runs": &b.Runs} {
		v := fs[key]
		if isNull(v) {
			continue
		}
		var n int64
		if v.Kind != yaml.ScalarNode || v.Decode(&n) != nil || n < 0 {
			p.add(v, "%s %s must be a whole number, 0 or more, e.g. %s", where, key, example)
			continue
		}
		*dst = &n
	}
	if b.USD == nil && b.Tokens == nil && b.Runs == nil {
		p.add(n, "%s sets no limit: give usd, tokens or runs, e.g. %s", where, example)
		return nil
	}
	return b
}

// loopGuard reads loop_guard: {max_rounds: N}; absent is the default, 0
// turns the guard off.
func (p *parser) loopGuard(n *yaml.Node) int {
	if isNull(n) {
		return DefaultLoopGuard
	}
	const example = "loop_guard: {max_rounds: 30}"
	if n.Kind != yaml.MappingNode {
		p.add(n, "loop_guard must be a map, e.g. %s (0 turns it off)", example)
		return DefaultLoopGuard
	}
	fs := p.fields(n, "in loop_guard", "max_rounds")
	v := fs["max_rounds"]
	if isNull(v) {
		return DefaultLoopGuard
	}
	var rounds int
	if v.Kind != yaml.ScalarNode || v.Decode(&rounds) != nil || rounds < 0 {
		p.add(v, "max_rounds must be a whole number, 0 or more (0 turns the guard off), e.g. %s", example)
		return DefaultLoopGuard
	}
	return rounds
}

// triggerExample is a whole trigger, for messages that show what to write.
const triggerExample = `{webhook: pr-opened, secret_env: PR_WEBHOOK_SECRET, message: "@reviewer new PR: ${{ body.pull_request.html_url }}"}`

// triggers reads the webhook triggers. A trigger without a secret is an
// error: the endpoint is outside the bearer token, so the signature is all
// that keeps strangers from posting into the channel.
func (p *parser) triggers(n *yaml.Node, agents []Agent) []Trigger {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "triggers must be a list, e.g. triggers: [%s]", triggerExample)
		return nil
	}
	var out []Trigger
	names := map[string]int{}
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each trigger must be a map, e.g. %s", triggerExample)
			continue
		}
		fs := p.fields(item, fmt.Sprintf("in trigger %d", i+1), "webhook", "provider", "secret_env", "events", "message", "report")
		t := Trigger{Name: p.str(fs["webhook"], "webhook"), SecretEnv: p.str(fs["secret_env"], "secret_env"),
			Message: p.str(fs["message"], "message"), Provider: HookProvider(p.str(fs["provider"], "provider")), Line: item.Line}
		label := fmt.Sprintf("trigger %d", i+1)
		switch line, dup := names[t.Name]; {
		case t.Name == "":
			p.add(item, "trigger %d needs a name: add webhook: e.g. webhook: pr-opened (it is served at POST /hooks/<workflow>/<name>)", i+1)
		case CheckScopeName("webhook", t.Name) != nil:
			p.add(fs["webhook"], "%v", CheckScopeName("webhook", t.Name))
		case dup:
			p.add(fs["webhook"], "duplicate webhook %q (first at line %d): rename or remove one", t.Name, line)
		default:
			names[t.Name] = fs["webhook"].Line
			label = "webhook " + t.Name
		}
		switch {
		case t.SecretEnv == "":
			p.add(item, "%s needs secret_env: the daemon's environment variable holding the webhook's secret, e.g. secret_env: PR_WEBHOOK_SECRET", label)
		case !identRE.MatchString(t.SecretEnv):
			p.add(fs["secret_env"], "%s: secret_env %q is not an environment variable name: use letters, digits and _, not starting with a digit", label, t.SecretEnv)
		}
		p.triggerEvents(&t, fs["provider"], fs["events"], label)
		t.Report = p.report(fs["report"], agents, label+" report")
		if strings.TrimSpace(t.Message) == "" {
			p.add(item, "%s needs a message: what to post in the channel, e.g. message: \"@reviewer new PR: ${{ body.pull_request.html_url }}\"", label)
		}
		p.body = true
		p.checkVars(fs["message"], t.Message, "", math.MaxInt)
		p.body = false
		out = append(out, t)
	}
	return out
}

// triggerEvents reads a trigger's provider (hmac when absent) and the
// events it takes, each a name of that provider.
func (p *parser) triggerEvents(t *Trigger, provider, events *yaml.Node, label string) {
	names := make([]string, len(HookProviders))
	for i, pr := range HookProviders {
		names[i] = string(pr)
	}
	switch {
	case t.Provider == "":
		t.Provider = ProviderHMAC
	case !slices.Contains(HookProviders, t.Provider):
		p.add(provider, "%s: unknown provider %q: %s", label, t.Provider, suggest(string(t.Provider), names, "use one of "))
		return
	}
	if isNull(events) {
		return
	}
	if t.Provider == ProviderHMAC {
		p.add(events, "%s: events: needs provider: github or gitlab, whose deliveries say which event they are", label)
		return
	}
	if events.Kind != yaml.SequenceNode {
		p.add(events, "%s: events must be a list, e.g. events: [%s]", label, exampleEvent(t.Provider))
		return
	}
	for _, item := range events.Content {
		item = deref(item)
		name := p.str(item, "events items")
		if msg := checkEvent(t.Provider, name); msg != "" {
			p.add(item, "%s: %s", label, msg)
			continue
		}
		t.Events = append(t.Events, name)
	}
}

// yamlKeyLimit is the longest plain key the YAML library reads; a longer one is a
// syntax error that says nothing about length.
const yamlKeyLimit = 1024

// longKey explains a YAML syntax error at line (or the line before) caused
// by a key too long for YAML, which is almost always a name pasted or
// generated wrong: an agent name under agents: gets the name's own length
// error. It returns the key's line and the message, or "" when the error
// has another cause.
func (p *parser) longKey(line int) (int, string) {
	lines := []int{line, line - 1}
	if line == 0 { // no line given: look at them all
		lines = lines[:0]
		for l := range p.src {
			lines = append(lines, l+1)
		}
	}
	for _, l := range lines {
		if l < 1 || l > len(p.src) {
			continue
		}
		text := strings.TrimRight(p.src[l-1], "\r")
		keys := longKeyRE.FindAllStringSubmatchIndex(text, -1)
		i := slices.IndexFunc(keys, func(m []int) bool { return m[3]-m[2] > yamlKeyLimit })
		if i < 0 {
			continue
		}
		m := keys[i]
		key, before := text[m[2]:m[3]], text[:m[2]]
		parent := ""
		if f := flowParentRE.FindStringSubmatch(before); f != nil {
			parent = f[1] // agents: {name: ...}
		} else if strings.TrimLeft(before, " -") == "" {
			parent = p.parentKey(l, len(text)-len(strings.TrimLeft(text, " ")))
		}
		if parent == "agents" {
			return l, CheckAgentName(key).Error()
		}
		return l, fmt.Sprintf("key %s is %d characters; YAML keys are at most %d (and names at most %d)", Quote(key), len(key), yamlKeyLimit, MaxNameLen)
	}
	return 0, ""
}

var (
	// longKeyRE finds a plain key on a line, in block or flow style.
	longKeyRE = regexp.MustCompile(`([^\s{}\[\],:#'"]+)\s*:(?:\s|$)`)
	// flowParentRE finds the key of the flow mapping a key sits in.
	flowParentRE = regexp.MustCompile(`([A-Za-z0-9_.-]+)\s*:\s*\{[^{}]*$`)
)

// parentKey is the key of the mapping holding line, found as the nearest
// line above it indented less than indent; "" at the top level.
func (p *parser) parentKey(line, indent int) string {
	for l := line - 1; l >= 1 && indent > 0; l-- {
		text := strings.TrimRight(p.src[l-1], "\r")
		body := strings.TrimLeft(text, " ")
		if body == "" || strings.HasPrefix(body, "#") || len(text)-len(body) >= indent {
			continue
		}
		key, _, _ := strings.Cut(body, ":")
		return strings.TrimSpace(key)
	}
	return ""
}

// The YAML node helpers every file of the parser calls, from
// internal/yamlnode, which the skill parser shares.
var (
	deref  = yamlnode.Deref
	isNull = yamlnode.IsNull
)

// entries lists a mapping's pairs in file order, reporting duplicate keys,
// which YAML itself silently resolves to the last one.
func (p *parser) entries(n *yaml.Node, where string) []yamlnode.Entry {
	return yamlnode.Entries(n, where, 0, p.add)
}

// fields returns a mapping's values by key, reporting keys not in known with
// the closest known one, since most unknown keys are typos.
func (p *parser) fields(n *yaml.Node, where string, known ...string) map[string]*yaml.Node {
	m := map[string]*yaml.Node{}
	for _, e := range p.entries(n, where) {
		if !slices.Contains(known, e.Key) {
			p.add(e.K, "unknown key %q %s: %s", e.Key, where, suggest(e.Key, known, "known keys are "))
			continue
		}
		m[e.Key] = e.V
	}
	return m
}

// suggest names the candidate closest to s, or lists them all when none is
// close enough to be a likely typo.
func suggest(s string, candidates []string, listPrefix string) string {
	if best := Closest(s, candidates); best != "" {
		return "did you mean " + best + "?"
	}
	return listPrefix + strings.Join(candidates, ", ")
}

// Closest is the candidate nearest to s by edit distance when it is near
// enough to be a likely typo, else "". It is the one "did you mean" of
// agent-worker: workflow files, backends and the daemon's config file
// all suggest with it.
func Closest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if d := distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	// A candidate as far away as s is long shares nothing with it.
	if best != "" && bestD <= max(2, len(s)/3) && bestD < len(s) {
		return best
	}
	return ""
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// str reads an optional scalar; null and absent both read as "".
func (p *parser) str(n *yaml.Node, name string) string {
	if isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.add(n, "%s must be a single value, not a list or map", name)
		return ""
	}
	return n.Value
}

func (p *parser) positive(n *yaml.Node, name, example string) int {
	if isNull(n) {
		return 0
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.Decode(&i) != nil || i <= 0 {
		p.add(n, "%s must be a whole number above 0, e.g. %s: %s", name, name, example)
		return 0
	}
	return i
}

func (p *parser) duration(n *yaml.Node, name, example string) time.Duration {
	s := p.str(n, name)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.add(n, "%s %q is not a duration above 0: write e.g. %s: %s", name, s, name, example)
		return 0
	}
	return d
}

func (p *parser) boolean(n *yaml.Node, name string) bool {
	var b bool
	if !isNull(n) && (n.Kind != yaml.ScalarNode || n.Decode(&b) != nil) {
		p.add(n, "%s must be true or false", name)
	}
	return b
}

// strList reads a list of values that may hold ${{ }} variables.
func (p *parser) strList(n *yaml.Node, name string) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "%s must be a list, e.g. %s: [a, b]", name, name)
		return nil
	}
	var out []string
	for _, item := range n.Content {
		item = deref(item)
		s := p.str(item, name+" items")
		p.checkVars(item, s, "", math.MaxInt)
		out = append(out, s)
	}
	return out
}

// strMap reads a map of values that may hold ${{ }} variables; envKeys
// requires keys that can be environment variable names.
func (p *parser) strMap(n *yaml.Node, name, where string, envKeys bool) map[string]string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s must be a map, e.g. %s: {KEY: value}", name, name)
		return nil
	}
	out := map[string]string{}
	for _, e := range p.entries(n, where) {
		if envKeys && !identRE.MatchString(e.Key) {
			p.add(e.K, "%s name %q is not valid: use letters, digits and _, not starting with a digit", name, e.Key)
		}
		s := p.str(e.V, name+" values")
		if strings.ContainsRune(s, 0) {
			// No environment variable or header can hold one, and the
			// store could not read the agent's config back.
			p.add(e.V, "%s value of %s holds a NUL byte: remove it", name, e.Key)
		}
		p.checkVars(e.V, s, "", math.MaxInt)
		out[e.Key] = s
	}
	return out
}

func (p *parser) name(n *yaml.Node) string {
	if s := p.str(n, "name"); s != "" {
		if err := CheckScopeName("workflow", s); err != nil {
			p.add(n, "%v", err)
		}
		return s
	}
	if p.file == "<workflow>" {
		p.addAt(1, 1, "workflow has no name and no file to take it from: add name: e.g. name: review")
		return ""
	}
	base := filepath.Base(p.file)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	if err := CheckScopeName("workflow", base); err != nil {
		p.addAt(1, 1, "%v (the name comes from the file name): add name: e.g. name: review", err)
	}
	return base
}

func (p *parser) paramList(n *yaml.Node) []Param {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "params must be a list, e.g. params: [{name: pr, required: true}]")
		return nil
	}
	var out []Param
	names, shorts := map[string]int{}, map[string]string{}
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each param must be a map, e.g. {name: pr, type: string}")
			continue
		}
		fs := p.fields(item, fmt.Sprintf("in params item %d", i+1), "name", "type", "required", "default", "description", "short")
		pr := Param{
			Name:        p.str(fs["name"], "name"),
			Description: p.str(fs["description"], "description"),
			Type:        p.str(fs["type"], "type"),
			Short:       p.str(fs["short"], "short"),
			Required:    p.boolean(fs["required"], "required"),
			Default:     p.str(fs["default"], "default"),
		}
		switch line, dup := names[pr.Name]; {
		case pr.Name == "":
			p.add(item, "param needs a name: add name: e.g. name: pr")
		case !paramNameRE.MatchString(pr.Name):
			p.add(fs["name"], "param name %q is not valid: use letters, digits, _ or -, starting with a letter", pr.Name)
		case dup:
			p.add(fs["name"], "duplicate param %q (first at line %d): rename or remove one", pr.Name, line)
		default:
			names[pr.Name] = fs["name"].Line
		}
		p.params[pr.Name] = true
		switch pr.Type {
		case "":
			pr.Type = "string"
		case "string", "number", "boolean":
		default:
			p.add(fs["type"], "param %s: type %q is not valid: use string, number or boolean", pr.Name, pr.Type)
		}
		if other, dup := shorts[pr.Short]; pr.Short != "" {
			switch {
			case !shortRE.MatchString(pr.Short):
				p.add(fs["short"], "param %s: short %q must be a single letter or digit, e.g. short: p", pr.Name, pr.Short)
			case dup:
				p.add(fs["short"], "param %s: short -%s is already used by param %s: pick another letter", pr.Name, pr.Short, other)
			default:
				shorts[pr.Short] = pr.Name
			}
		}
		if !isNull(fs["default"]) {
			switch {
			case pr.Required:
				p.add(fs["default"], "param %s is required, so its default is never used: drop required: or default:", pr.Name)
			case pr.Type == "number" && !isNumber(pr.Default):
				p.add(fs["default"], "param %s: default %q must be a number", pr.Name, pr.Default)
			case pr.Type == "boolean":
				b, err := strconv.ParseBool(pr.Default)
				if err != nil {
					p.add(fs["default"], "param %s: default %q must be true or false", pr.Name, pr.Default)
				}
				pr.Default = strconv.FormatBool(b)
			}
		}
		out = append(out, pr)
	}
	return out
}

func isNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

func (p *parser) setupSteps(n *yaml.Node) []SetupStep {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "setup must be a list, e.g. setup: [{shell: git rev-parse HEAD, as: commit}]")
		return nil
	}
	var out []SetupStep
	var shells []*yaml.Node
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each setup step must be a map, e.g. {shell: git rev-parse HEAD, as: commit}")
			continue
		}
		fs := p.fields(item, fmt.Sprintf("in setup step %d", i+1), "shell", "as", "timeout")
		st := SetupStep{Shell: p.str(fs["shell"], "shell"), As: p.str(fs["as"], "as"), Timeout: defaultSetupTimeout, Line: item.Line}
		if st.Shell == "" {
			p.add(item, "setup step %d needs a command: add shell: e.g. shell: git rev-parse HEAD", i+1)
		}
		if d := p.duration(fs["timeout"], "timeout", "30s"); d > 0 {
			st.Timeout = d
		}
		if st.As != "" {
			prev, dup := p.setupAs[st.As]
			switch {
			case slices.Contains(reservedAs, st.As):
				p.add(fs["as"], "setup step %d: as: %s is reserved (env, workflow, params and source are variable namespaces): pick another name", i+1, st.As)
			case !identRE.MatchString(st.As):
				p.add(fs["as"], "setup step %d: as: %q must be a name of letters, digits and _, not starting with a digit", i+1, st.As)
			case dup:
				p.add(fs["as"], "setup step %d: as: %s is already set by setup step %d (line %d): pick another name", i+1, st.As, prev+1, out[prev].Line)
			default:
				p.setupAs[st.As] = len(out)
			}
		}
		out = append(out, st)
		shells = append(shells, fs["shell"])
	}
	// Checked once every name is known, to tell "set later" from "unknown".
	for i, st := range out {
		p.checkVars(shells[i], st.Shell, "", i)
	}
	return out
}

func (p *parser) agents(root, n *yaml.Node) []Agent {
	switch {
	case n == nil:
		p.add(root, "workflow has no agents: add agents: with at least one agent, e.g. agents: {reviewer: {backend: mock}}")
		return nil
	case isNull(n) || n.Kind == yaml.MappingNode && len(n.Content) == 0:
		p.add(n, "agents is empty: add at least one agent, e.g. agents: {reviewer: {backend: mock}}")
		return nil
	case n.Kind != yaml.MappingNode:
		p.add(n, "agents must be a map from agent name to its settings, e.g. agents: {reviewer: {backend: mock}}")
		return nil
	}
	var out []Agent
	for _, e := range p.entries(n, "in agents") {
		out = append(out, p.agent(e.K, e.V))
	}
	return out
}

func (p *parser) agent(k, v *yaml.Node) Agent {
	a := Agent{Name: k.Value, Line: k.Line}
	if err := CheckAgentName(a.Name); err != nil {
		p.add(k, "%v", err)
	}
	if isNull(v) {
		v = &yaml.Node{Kind: yaml.MappingNode}
	}
	if v.Kind != yaml.MappingNode {
		p.add(v, "agent %s must be a map of its settings, e.g. %s: {backend: mock}", a.Name, a.Name)
		return a
	}
	where := "in agent " + a.Name
	fs := p.fields(v, where, agentKeys...)

	word := p.str(fs["backend"], "backend")
	a.Backend = BackendName(word)
	switch {
	case !pluginNameRE.MatchString(a.Backend):
		p.add(fs["backend"], "backend %q is not valid: use %s or a plugin name (up to 32 lowercase letters, digits, _ or -)", word, strings.Join(Backends, ", "))
	case p.checkBackend != nil:
		if err := p.checkBackend(word); err != nil {
			at := fs["backend"]
			if isNull(at) {
				at = k // no backend: the default, sdk, is what cannot run
			}
			p.add(at, "agent %q: %v", a.Name, err)
		}
	}
	// An sdk agent without a model takes the daemon's default model.
	a.Model = p.str(fs["model"], "model")
	a.SystemPrompt = p.systemPrompt(fs["system_prompt"])

	sched, schedKey := fs["schedule"], "schedule"
	if w := fs["wakeup"]; !isNull(w) {
		if !isNull(sched) {
			p.add(w, "wakeup is the old name of schedule: keep only schedule:")
		} else {
			sched, schedKey = w, "wakeup"
		}
	}
	if a.Schedule = strings.TrimSpace(p.str(sched, schedKey)); a.Schedule != "" {
		if _, err := ParseSchedule(a.Schedule); err != nil {
			p.add(sched, "%s %v", schedKey, err)
		}
	}
	a.WakeupPrompt = p.str(fs["wakeup_prompt"], "wakeup_prompt")
	if !isNull(fs["wakeup_prompt"]) && isNull(sched) {
		p.add(fs["wakeup_prompt"], "wakeup_prompt is only used by scheduled wakes: add schedule: (e.g. schedule: 30m) or remove wakeup_prompt")
	}
	p.checkVars(fs["wakeup_prompt"], a.WakeupPrompt, "", math.MaxInt)

	a.MaxSteps = p.positive(fs["max_steps"], "max_steps", "50")
	a.Timeout = p.duration(fs["timeout"], "timeout", "10m")
	a.MCPServers = p.mcpServers(fs["mcp_servers"], a.Name)
	a.Env = p.strMap(fs["env"], "env", where, true)
	a.Provider = p.provider(fs["provider"], a.Name)
	a.Tools = p.tools(fs["tools"], a.Backend)
	a.Sandbox = p.sandbox(fs["sandbox"], a.Name)
	a.Limits = p.limits(fs["limits"], a.Name)
	a.Approvals = p.approvals(fs["approvals"], fs["approval_timeout"], "agent "+a.Name)
	a.Budget = p.budget(fs["budget"], "agent "+a.Name+" budget")
	a.CanSpawn = p.boolean(fs["can_spawn"], "can_spawn")
	a.MaxSpawned = p.positive(fs["max_spawned"], "max_spawned", "5")
	switch {
	case a.MaxSpawned > 0 && !a.CanSpawn:
		p.add(fs["max_spawned"], "max_spawned only applies to an agent that may spawn helpers: add can_spawn: true or remove max_spawned")
	case a.CanSpawn && a.MaxSpawned == 0:
		a.MaxSpawned = DefaultMaxSpawned
	}
	a.Config = p.config(fs["config"])
	a.Effort = p.agentEffort(fs["effort"], a.Name)
	a.Roles = p.roles(fs["roles"])
	return a
}

// roles reads an agent's roles: a list of names tools.CheckRole accepts,
// each problem at its item's line.
func (p *parser) roles(n *yaml.Node) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "roles must be a list, e.g. roles: [reviewer, backend]")
		return nil
	}
	var out []string
	for _, item := range n.Content {
		item = deref(item)
		r := p.str(item, "roles items")
		if err := tools.CheckRole(r); err != nil {
			p.add(item, "roles: %v", err)
			continue
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// tools reads an agent's workspace tool sets; absent or null is nil (all).
func (p *parser) tools(n *yaml.Node, backend string) []string {
	if isNull(n) {
		return nil
	}
	if slices.Contains(cliBackends, backend) {
		p.add(n, "tools only applies to the sdk backend; the %s CLI brings its own tools: remove tools:", backend)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "tools must be a list of %s, e.g. tools: [read, write], or [] for none", strings.Join(WorkspaceTools, ", "))
		return nil
	}
	out := []string{}
	for _, item := range n.Content {
		item = deref(item)
		name := p.str(item, "tools items")
		switch {
		case name == "":
		case !slices.Contains(WorkspaceTools, name):
			p.add(item, "unknown tool %q: use some of %s, or tools: [] for none", name, strings.Join(WorkspaceTools, ", "))
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out
}

// systemPrompt reads inline text or, for a one-line value ending in .md or
// .txt, that file. A missing file is an error rather than literal text, so a
// typo in the path cannot become the prompt; a value with spaces may still
// be prose that happens to end in ".md".
func (p *parser) systemPrompt(n *yaml.Node) string {
	s := p.str(n, "system_prompt")
	if strings.Contains(s, "\n") || !strings.HasSuffix(s, ".md") && !strings.HasSuffix(s, ".txt") {
		p.checkVars(n, s, "", math.MaxInt)
		return s
	}
	path := s
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	b, err := ReadLimited(path, "system_prompt file "+s, MaxSystemPromptBytes)
	switch {
	case err == nil:
		p.checkVars(n, string(b), s, math.MaxInt)
		return string(b)
	case errors.Is(err, ErrTooLarge):
		p.add(n, "%v", err)
	case errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(s, " \t"):
		p.checkVars(n, s, "", math.MaxInt)
		return s
	case errors.Is(err, fs.ErrNotExist):
		p.add(n, "system_prompt file %s not found next to the workflow file: create it, or write the prompt inline", s)
	default:
		p.add(n, "system_prompt file %s cannot be read: %v", s, err)
	}
	return ""
}

func (p *parser) mcpServers(n *yaml.Node, agent string) []MCPServer {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "mcp_servers must be a map from server name to {command: [program, args...]} or {url: https://...}")
		return nil
	}
	var out []MCPServer
	for _, e := range p.entries(n, "in mcp_servers of agent "+agent) {
		if !mcpNameRE.MatchString(e.Key) {
			p.add(e.K, "mcp server name %q is not valid: use up to 64 letters, digits, ., _ or -", e.Key)
		}
		if e.V.Kind != yaml.MappingNode {
			p.add(e.V, "mcp server %s must be a map with command: [program, args...] or url: https://...", e.Key)
			continue
		}
		where := fmt.Sprintf("in mcp server %s of agent %s", e.Key, agent)
		fs := p.fields(e.V, where, "command", "args", "url", "env", "headers")
		s := MCPServer{Name: e.Key, URL: p.str(fs["url"], "url")}
		if c := fs["command"]; !isNull(c) && c.Kind == yaml.ScalarNode {
			s.Command = []string{c.Value} // a lone program, as in Claude's own config
			p.checkVars(c, c.Value, "", math.MaxInt)
		} else {
			s.Command = p.strList(c, "command")
		}
		args := p.strList(fs["args"], "args")
		p.checkVars(fs["url"], s.URL, "", math.MaxInt)
		s.Env = p.strMap(fs["env"], "env", where, true)
		s.Headers = p.strMap(fs["headers"], "headers", where, false)
		switch {
		case len(s.Command) == 0 && s.URL == "":
			p.add(e.K, "mcp server %s needs command: [program, args...] or url: https://...", e.Key)
		case len(s.Command) > 0 && s.URL != "":
			p.add(e.K, "mcp server %s has both command and url: keep one", e.Key)
		case s.URL != "" && len(args) > 0:
			p.add(fs["args"], "args only apply to command servers: remove args or use command:")
		case s.URL != "" && s.Env != nil:
			p.add(fs["env"], "env only applies to command servers: use headers: for url servers")
		case len(s.Command) > 0 && s.Headers != nil:
			p.add(fs["headers"], "headers only apply to url servers: use env: for command servers")
		case s.URL != "" && !strings.Contains(s.URL, "${{") && !isHTTP(s.URL):
			p.add(fs["url"], "url %q must start with http:// or https://", s.URL)
		}
		s.Command = append(s.Command, args...)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func isHTTP(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func (p *parser) provider(n *yaml.Node, agent string) *Provider {
	switch {
	case isNull(n):
		return nil
	case n.Kind == yaml.ScalarNode:
		return &Provider{Name: n.Value}
	case n.Kind != yaml.MappingNode:
		p.add(n, "provider must be a name or a map {name, base_url, api_key_env}")
		return nil
	}
	fs := p.fields(n, "in provider of agent "+agent, "name", "base_url", "api_key_env")
	pr := &Provider{Name: p.str(fs["name"], "name"), BaseURL: p.str(fs["base_url"], "base_url"), APIKeyEnv: p.str(fs["api_key_env"], "api_key_env")}
	if pr.Name == "" {
		p.add(n, "provider needs a name: add name: e.g. name: deepseek")
	}
	if pr.BaseURL != "" && !isHTTP(pr.BaseURL) {
		p.add(fs["base_url"], "base_url %q must start with http:// or https://", pr.BaseURL)
	}
	if pr.APIKeyEnv != "" && !identRE.MatchString(pr.APIKeyEnv) {
		p.add(fs["api_key_env"], "api_key_env names the environment variable holding the key, e.g. api_key_env: DEEPSEEK_API_KEY")
	}
	return pr
}

// config passes the backend's own settings through as JSON, uninterpolated:
// a mock script may hold braces of its own.
func (p *parser) config(n *yaml.Node) map[string]json.RawMessage {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "config must be a map of backend settings, e.g. config: {script: [...]}")
		return nil
	}
	for _, e := range p.entries(n, "in config") {
		switch {
		case e.Key == "sandbox" && e.V.Kind == yaml.ScalarNode && !isNull(e.V):
			// Written before sandbox: was the agent's own setting.
			p.add(e.K, "config key \"sandbox\" clashes with the agent's own sandbox: setting: for codex's sandbox mode write config: {sandbox_mode: %s}", e.V.Value)
		case slices.Contains(configOwned, e.Key):
			p.add(e.K, "config key %q clashes with the agent's own %s: setting: move it out of config:", e.Key, e.Key)
		}
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		p.add(n, "config cannot be read: %v", err)
		return nil
	}
	out := make(map[string]json.RawMessage, len(v))
	for k, val := range v {
		b, err := json.Marshal(val)
		if err != nil {
			p.add(n, "config cannot be passed to the backend as JSON (%v): use text keys in every map", err)
			return nil
		}
		out[k] = b
	}
	return out
}

func (p *parser) context(n *yaml.Node, agents []Agent) Context {
	// Documents stays "" unless the file names a provider: the daemon
	// picks the default, file on its own and postgres in a cluster.
	var c Context
	if isNull(n) {
		return c
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "context must be a map, e.g. context: {documents: sqlite}")
		return c
	}
	fs := p.fields(n, "in context", "documents", "provider", "config", "documentOwner", "long_message_chars")
	// The seed wrote `provider:` where this file format says `documents:`;
	// both load, and mean the same.
	d := fs["documents"]
	if pr := fs["provider"]; !isNull(pr) {
		if !isNull(d) {
			p.add(pr, "provider and documents both name the documents provider (provider is the older name): keep only documents:")
		} else {
			d = pr
		}
	}
	var dirNode *yaml.Node
	if !isNull(d) {
		node := d
		switch d.Kind {
		case yaml.ScalarNode:
			c.Documents = d.Value
		case yaml.MappingNode:
			dfs := p.fields(d, "in context.documents", "provider", "dir")
			if c.Documents = p.str(dfs["provider"], "provider"); c.Documents == "" {
				p.add(d, "documents needs a provider: add provider: e.g. {provider: file, dir: ./docs}")
			} else {
				node = dfs["provider"]
			}
			if dir := p.str(dfs["dir"], "dir"); dir != "" {
				c.DocsDir, dirNode = p.docsDir(dfs["dir"], dir), dfs["dir"]
			}
		default:
			p.add(d, "documents must be file, sqlite or {provider: NAME, dir: PATH}")
		}
		if c.Documents != "" && !pluginNameRE.MatchString(c.Documents) {
			p.add(node, "documents provider %q is not valid: use file, sqlite or a docs provider plugin name", c.Documents)
		}
		if c.Documents == "" {
			c.Documents = "file"
		}
	}
	if cfg := fs["config"]; !isNull(cfg) {
		if dir, node := p.seedContextDir(cfg); dir != "" {
			if dirNode != nil {
				p.add(node, "the documents folder is given twice (documents.dir at line %d): keep one", dirNode.Line)
			} else {
				c.DocsDir, dirNode = filepath.Join(p.docsDir(node, dir), "documents"), node
			}
		}
	}
	if dirNode != nil && c.Documents == "" {
		c.Documents = "file" // only the file provider keeps documents in a folder
	}
	if dirNode != nil && c.Documents == "sqlite" {
		p.add(dirNode, "a documents folder only applies to the file provider (sqlite keeps documents in its database): remove dir, or use provider: file")
	}
	c.DocumentOwner = p.str(fs["documentOwner"], "documentOwner")
	if o := c.DocumentOwner; o != "" && !slices.ContainsFunc(agents, func(a Agent) bool { return a.Name == o }) {
		names := make([]string, len(agents))
		for i, a := range agents {
			names[i] = a.Name
		}
		p.add(fs["documentOwner"], "documentOwner %q is not an agent of this workflow: %s", o, suggest(o, names, "use one of "))
	}
	c.LongMessageChars = p.positive(fs["long_message_chars"], "long_message_chars", "4000")
	return c
}

// docsDir checks the documents folder dir, written at n, and anchors it at
// the workflow file's folder. One that starts with a variable is anchored
// once resolved, since the variable may itself be absolute.
func (p *parser) docsDir(n *yaml.Node, dir string) string {
	p.checkVars(n, dir, "", math.MaxInt)
	if !filepath.IsAbs(dir) && !strings.HasPrefix(dir, "${{") {
		dir = filepath.Join(p.dir, dir)
	}
	return dir
}

// seedContextDir reads the seed's `context.config: {dir | bind}`: the folder
// that held the seed's whole context. Here the channel and inbox live in the
// daemon's store (kept across runs either way, so dir and bind mean the
// same), and the documents go to its documents/ subfolder, where the seed
// kept them. It returns the folder as written and its node.
func (p *parser) seedContextDir(n *yaml.Node) (string, *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.add(n, "context.config must be a map, e.g. config: {dir: ./ctx}; or write documents: {provider: file, dir: ./docs}")
		return "", nil
	}
	fs := p.fields(n, "in context.config", "dir", "bind")
	dir, bind := fs["dir"], fs["bind"]
	switch {
	case !isNull(dir) && !isNull(bind):
		p.add(bind, "dir and bind are two ways to name the context folder: keep one")
		return "", nil
	case !isNull(bind):
		dir = bind
	case isNull(dir):
		return "", nil
	}
	return p.str(dir, "dir"), dir
}

// checkVars reports every ${{ }} in s that cannot resolve. n holds s; file
// names the prompt file s came from ("" for the YAML itself); only the first
// steps setup steps have run when s is used.
func (p *parser) checkVars(n *yaml.Node, s, file string, steps int) {
	if n == nil || !strings.Contains(s, "${{") {
		return
	}
	report := func(off int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if file != "" {
			p.add(n, "in %s line %d: %s", file, strings.Count(s[:off], "\n")+1, msg)
			return
		}
		line, col := p.at(n, s, off)
		p.addAt(line, col, "%s", msg)
	}
	end := 0
	for _, m := range varRE.FindAllStringSubmatchIndex(s, -1) {
		if i := strings.Index(s[end:m[0]], "${{"); i >= 0 {
			report(end+i, "unterminated ${{: close it with }}")
		}
		end = m[1]
		if msg := p.unknownVar(s[m[2]:m[3]], steps); msg != "" {
			report(m[0], "%s", msg)
		}
	}
	if i := strings.Index(s[end:], "${{"); i >= 0 {
		report(end+i, "unterminated ${{: close it with }}")
	}
}

// unknownVar says why expr will not resolve, or "" when it will.
func (p *parser) unknownVar(expr string, steps int) string {
	const all = "use env.NAME, params.NAME, workflow.name, workflow.tag, source.dir or a setup step's as: name"
	ns, name, dotted := strings.Cut(expr, ".")
	switch {
	case ns == "body" && dotted && !p.body:
		return fmt.Sprintf("${{ %s }} is only set in a trigger's message (it reads the webhook's JSON body): %s", expr, all)
	case ns == "body" && dotted && !bodyPathRE.MatchString(name):
		return fmt.Sprintf("${{ %s }}: write a dot path into the JSON body, e.g. body.pull_request.html_url or body.commits.0.id", expr)
	case ns == "body" && dotted:
		return ""
	case !dotted && identRE.MatchString(expr):
		i, ok := p.setupAs[expr]
		switch {
		case ok && i < steps:
			return ""
		case ok:
			return fmt.Sprintf("${{ %s }} is set by setup step %d, which runs later: move that step first", expr, i+1)
		}
		names := make([]string, 0, len(p.setupAs))
		for n, i := range p.setupAs {
			if i < steps {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		if s := suggest(expr, names, ""); strings.HasPrefix(s, "did") {
			return fmt.Sprintf("unknown variable ${{ %s }}: %s", expr, s)
		}
		earlier := "earlier "
		if steps == math.MaxInt {
			earlier = ""
		}
		return fmt.Sprintf("unknown variable ${{ %s }}: no %ssetup step has as: %s; %s", expr, earlier, expr, all)
	case ns == "env" && identRE.MatchString(name):
		return ""
	case ns == "params" && p.params[name]:
		return ""
	case ns == "params":
		names := make([]string, 0, len(p.params))
		for n := range p.params {
			names = append(names, n)
		}
		slices.Sort(names)
		hint := "declare it under params:"
		if s := suggest(name, names, ""); strings.HasPrefix(s, "did") {
			hint = "did you mean params." + strings.TrimPrefix(s, "did you mean ") + " (or declare " + name + " under params:)"
		}
		return fmt.Sprintf("unknown variable ${{ %s }}: %s", expr, hint)
	case expr == "workflow.name", expr == "workflow.tag", expr == "source.dir":
		return ""
	case ns == "workflow":
		return fmt.Sprintf("unknown variable ${{ %s }}: use workflow.name or workflow.tag", expr)
	case ns == "source":
		return fmt.Sprintf("unknown variable ${{ %s }}: use source.dir", expr)
	}
	return fmt.Sprintf("unknown variable ${{ %s }}: %s", expr, all)
}

// at places byte off of s, the value of n, in the source: exactly for
// one-line values and literal (|) blocks, else at the start of the value.
func (p *parser) at(n *yaml.Node, s string, off int) (line, col int) {
	lineStart := strings.LastIndex(s[:off], "\n") + 1
	prefix := s[lineStart:off]
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		line = n.Line + 1 + strings.Count(s[:off], "\n")
		valLine, _, _ := strings.Cut(s[lineStart:], "\n")
		if line <= len(p.src) {
			if src := strings.TrimRight(p.src[line-1], "\r"); strings.HasSuffix(src, valLine) {
				col = len(src) - len(valLine) + len(prefix) + 1
			}
		}
	case lineStart == 0 && n.Style&yaml.FoldedStyle == 0:
		line, col = n.Line, n.Column+len(prefix)
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			col++
		}
	}
	if line > 0 && line <= len(p.src) && col > 0 && col <= len(p.src[line-1]) && strings.HasPrefix(p.src[line-1][col-1:], "${{") {
		return line, col
	}
	return n.Line, n.Column
}
