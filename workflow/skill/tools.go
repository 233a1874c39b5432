package skill

import (
	"fmt"
	"slices"
	"strings"
)

// Tools are a phase's tool rules. Deny wins over allow; when an allow list
// is given (Restricted), whatever it does not allow is refused.
type Tools struct {
	Allow, Deny []Rule
	// Restricted is true when the phase has an allow list, even an empty
	// one (only the effort tools then).
	Restricted bool
}

// A Rule is one entry of an allow or deny list: a tool name or a glob over
// tool names (doc_*), or with the prefix shell: a glob over the commands
// given to the shell tools.
type Rule struct {
	// Text is the rule as written, for messages.
	Text string
	// Shell marks a shell: rule, whose Pattern is over commands.
	Shell bool
	// Pattern is the glob, with the daemon's MCP prefix taken off a tool
	// name and runs of spaces in a command made one.
	Pattern string
}

// A Call is a tool call the gate decides on.
type Call struct {
	// Tool is the name the backend gave it: run_shell, Bash, write_file,
	// channel_send or mcp__agent-worker__channel_send.
	Tool string
	// Command is the command line of a shell tool's call.
	Command string
	// Path is the file of a file tool's call, relative to the effort's
	// directory; the rules do not use it yet.
	Path string
}

// A Decision is the gate's answer to a Call.
type Decision struct {
	Allowed bool
	// Reason says why a call was refused, in words a model can act on:
	// which phase, which rule, and what to do instead.
	Reason string
	// Rule is the rule that refused it ("deny shell:git commit*"), or
	// "allow" when it was refused for not being in the allow list.
	Rule string
}

// ShellTools are the tools whose calls carry a command line that shell:
// rules apply to: the sdk backend's run_shell, Claude Code's Bash, the
// mock's shell step, and Codex's shell and local_shell.
var ShellTools = []string{"run_shell", "Bash", "shell", "local_shell"}

// EffortTools are always allowed, whatever a phase's rules say: without
// them an agent could not leave a phase, read where it is, or log.
var EffortTools = []string{"effort_continue", "effort_status", "effort_log", "effort_finish"}

// daemonServers are the names the backends give the daemon's own MCP
// server: Claude Code's mcp__agent-worker__<tool>, Codex's
// mcp__agent_worker__<tool>.
var daemonServers = []string{"agent-worker", "agent_worker"}

// ToolName is the name rules match a tool by: the daemon's own tools lose
// their MCP prefix (mcp__agent-worker__channel_send is channel_send), so a
// skill names them once for every backend. Other MCP servers' tools keep
// theirs (mcp__github__create_issue), and a rule names them in full or by
// a glob such as mcp__github__*.
func ToolName(tool string) string {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok {
		return tool
	}
	for _, s := range daemonServers {
		if name, ok := strings.CutPrefix(rest, s+"__"); ok && name != "" {
			return name
		}
	}
	return tool
}

// IsShellTool says whether calls of tool carry a shell command.
func IsShellTool(tool string) bool { return slices.Contains(ShellTools, ToolName(tool)) }

// Check decides whether the phase allows call. No tools: everything is
// allowed. A tool name denied, or any simple command of a shell call
// matching a deny shell: glob, is refused. Under an allow list the call
// must be allowed by name, or be a shell call each of whose simple
// commands matches an allow shell: glob; the scripts of sh -c, bash -c and
// eval are parts of the wrapper's command there (an allow glob must match
// `sh -c …` itself), while the commands in $(…) must each be allowed.
// The effort tools are always allowed.
func (p *Phase) Check(call Call) Decision {
	rule, why := p.decide(call)
	if rule == "" {
		return Decision{Allowed: true}
	}
	what := ToolName(call.Tool)
	if IsShellTool(call.Tool) {
		what += " " + quoteCmd(call.Command)
	}
	reason := fmt.Sprintf("phase %s of skill %s does not allow %s: %s", p.Name, p.skill.Name, what, why)
	next := ""
	for _, l := range p.Later() {
		if r, _ := l.decide(call); r == "" {
			next = l.Name
			break
		}
	}
	if next != "" {
		reason += fmt.Sprintf("; finish this phase first (%s), phase %s allows it", p.finishHint(), next)
	} else {
		reason += "; no later phase of the skill allows it either, so do this phase's work another way"
	}
	return Decision{Reason: reason, Rule: rule}
}

// decide is Check without the words: the rule that refuses call and why,
// or "" when it is allowed.
func (p *Phase) decide(call Call) (rule, why string) {
	name := ToolName(call.Tool)
	if p.Tools == nil || slices.Contains(EffortTools, name) {
		return "", ""
	}
	t := p.Tools
	shell := IsShellTool(name)
	var parts []part
	if shell {
		parts = shellParts(call.Command)
	}
	if r := matchName(t.Deny, name); r != nil {
		return "deny " + r.Text, fmt.Sprintf("%s is denied by %q", name, r.Text)
	}
	for _, pt := range parts {
		if r := matchCommand(t.Deny, pt); r != nil {
			return "deny " + r.Text, fmt.Sprintf("the command %s is denied by %q", quoteCmd(pt.text), r.Text)
		}
	}
	if !t.Restricted || matchName(t.Allow, name) != nil {
		return "", ""
	}
	if !shell || !slices.ContainsFunc(t.Allow, func(r Rule) bool { return r.Shell }) {
		return "allow", fmt.Sprintf("%s is not in its allow list (%s)", name, ruleList(t.Allow))
	}
	for _, pt := range parts {
		if pt.from == fromScript {
			continue
		}
		if matchCommand(t.Allow, pt) == nil {
			return "allow", fmt.Sprintf("the command %s matches none of its allowed commands (%s)", quoteCmd(pt.text), ruleList(t.Allow))
		}
	}
	return "", ""
}

// finishHint says how to leave the phase: effort_continue with its
// required proof fields.
func (p *Phase) finishHint() string {
	var req []string
	for _, f := range p.Proof {
		if !f.Optional {
			req = append(req, f.Name)
		}
	}
	if len(req) == 0 {
		return "effort_continue"
	}
	return "effort_continue with proof " + strings.Join(req, ", ")
}

func matchName(rules []Rule, name string) *Rule {
	for i, r := range rules {
		if !r.Shell && wild(r.Pattern, name) {
			return &rules[i]
		}
	}
	return nil
}

// matchCommand is the first shell: rule that matches the part as written
// or with its program's directory taken off.
func matchCommand(rules []Rule, pt part) *Rule {
	for i, r := range rules {
		if r.Shell && (wild(r.Pattern, pt.text) || pt.base != "" && wild(r.Pattern, pt.base)) {
			return &rules[i]
		}
	}
	return nil
}

// ruleList names rules for a message, the first few of a long list.
func ruleList(rules []Rule) string {
	if len(rules) == 0 {
		return "empty: only the effort tools"
	}
	const most = 8
	var texts []string
	for _, r := range rules[:min(len(rules), most)] {
		texts = append(texts, r.Text)
	}
	if len(rules) > most {
		texts = append(texts, fmt.Sprintf("and %d more", len(rules)-most))
	}
	return strings.Join(texts, ", ")
}

// quoteCmd quotes a command for a message in backquotes, cut when long.
func quoteCmd(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 120
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return "`" + s + "`"
}
