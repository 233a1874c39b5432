package main

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// The hidden commands: not in the tree, so neither in --help nor in
// docs/cli.md. The shell scripts of `completion` call __complete; `make
// docs` calls __docs.
const (
	completeCmdName = "__complete"
	docsCmdName     = "__docs"
)

// filesDirective is the last line __complete prints when the shell should
// complete file names itself. No candidate begins with a colon.
const filesDirective = ":files"

// completeTimeout bounds everything __complete asks a daemon: a shell waits
// for it on every Tab.
const completeTimeout = time.Second

// runHidden runs a hidden command named by args[0]; ok is false for any
// other args.
func runHidden(ctx context.Context, root *ffcli.Command, e *env, args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case completeCmdName:
		// Silent whatever happens: the shell shows stderr in the middle
		// of the line being typed.
		e.stderr = io.Discard
		e.home, e.timeout = completionHome(args[1:]), completeTimeout
		ctx, cancel := context.WithTimeout(ctx, 2*completeTimeout)
		defer cancel()
		res := complete(ctx, root, args[1:], e.daemonSource())
		for _, c := range res.cands {
			if c.desc != "" {
				e.printf("%s\t%s\n", c.value, c.desc)
			} else {
				e.printf("%s\n", c.value)
			}
		}
		if res.files {
			e.printf("%s\n", filesDirective)
		}
		return api.ExitOK, true
	case docsCmdName:
		if len(args) > 1 {
			e.printf("usage: agent-worker %s > docs/cli.md\n", docsCmdName)
			return api.ExitUsage, true
		}
		e.printf("%s", cliDoc(root))
		return api.ExitOK, true
	}
	return 0, false
}

// completionHome is the home a command line being completed names with
// --home, or the default one.
func completionHome(words []string) string {
	for i, w := range words {
		name, value, eq := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "-") || name != "home" {
			continue
		}
		if eq {
			return value
		}
		if i+2 < len(words) { // the last word is still being typed
			return words[i+1]
		}
	}
	return api.DefaultHome()
}

// candidate is one completion, with what the shells that show it (zsh,
// fish) print beside it.
type candidate struct{ value, desc string }

// completion is __complete's answer: candidates matching the word being
// typed, and whether file names fit there too.
type completion struct {
	cands []candidate
	files bool
}

// completionSource answers for the values only a running daemon knows.
// Each returns nil when there is no daemon or it does not answer.
type completionSource struct {
	agents, workflows, runs, questions, approvals func(ctx context.Context) []candidate
}

// complete answers for words, the command line after the program name
// whose last word is the one being typed (maybe ""). It walks the real
// command tree: subcommands, each command's flags, and for positional
// arguments and flag values what the command's ShortUsage says they are.
func complete(ctx context.Context, root *ffcli.Command, words []string, src completionSource) completion {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	cmd, path := root, []string(nil)
	npos := 0              // positional arguments of cmd before cur
	var pending *flag.Flag // a flag whose value cur is
	afterDashDash := false // cur follows a bare "--"
	for _, w := range words[:len(words)-1] {
		switch {
		case pending != nil:
			pending = nil
		case afterDashDash:
		case w == "--":
			afterDashDash = true
		case len(w) > 1 && w[0] == '-':
			name, _, eq := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if f := cmd.FlagSet.Lookup(name); f != nil && !eq && !isBoolFlag(f) {
				pending = f
			}
		case npos == 0 && subcommand(cmd, w) != nil:
			cmd = subcommand(cmd, w)
			path = append(path, w)
		default:
			npos++
		}
	}
	var out []candidate
	var files bool
	switch {
	case afterDashDash:
		files = true
	case pending != nil:
		out, files = flagValues(ctx, cmd, pending, src)
	case strings.HasPrefix(cur, "-"):
		out = flagNames(cmd, cur)
	case len(path) == 1 && path[0] == "help":
		// help's arguments are a command's path: complete the next name.
		c := root
		for _, w := range words[slices.Index(words, "help")+1 : len(words)-1] {
			if strings.HasPrefix(w, "-") {
				continue
			}
			if c = subcommand(c, w); c == nil {
				return completion{}
			}
		}
		for _, s := range c.Subcommands {
			out = append(out, candidate{s.Name, s.ShortHelp})
		}
	default:
		if npos == 0 {
			for _, s := range cmd.Subcommands {
				out = append(out, candidate{s.Name, s.ShortHelp})
			}
		}
		for _, p := range usageArgs(cmd, path, npos) {
			vs, f := values(ctx, p, src)
			out, files = append(out, vs...), files || f
		}
	}
	return completion{cands: matching(out, cur), files: files}
}

func subcommand(c *ffcli.Command, name string) *ffcli.Command {
	for _, s := range c.Subcommands {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagNames are cmd's flags as cur spells them: --name and -n after one
// dash, -name after a dash and more, --name and --n after two.
func flagNames(cmd *ffcli.Command, cur string) []candidate {
	double := strings.HasPrefix(cur, "--")
	single := !double && cur != "-"
	var out []candidate
	cmd.FlagSet.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if single || (len(f.Name) == 1 && !double) {
			dash = "-"
		}
		out = append(out, candidate{dash + f.Name, f.Usage})
	})
	return out
}

// flagValues completes the value of flag f: from the placeholder beside it
// in cmd's ShortUsage (--format claude|cursor|codex, --assign AGENT,
// --from PATH), else file names for flags named as files or directories.
func flagValues(ctx context.Context, cmd *ffcli.Command, f *flag.Flag, src completionSource) ([]candidate, bool) {
	toks := usageTokens(strings.NewReplacer("[", " ", "]", " ").Replace(cmd.ShortUsage))
	for i, t := range toks {
		if (t == "--"+f.Name || t == "-"+f.Name) && i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "-") {
			if vs, files := values(ctx, toks[i+1], src); len(vs) > 0 || files {
				return vs, files
			}
		}
	}
	n := f.Name
	return nil, n == "home" || n == "from" || strings.HasSuffix(n, "-file") || strings.HasSuffix(n, "-dir")
}

// usageArgs reads cmd's ShortUsage for the placeholders of positional
// argument n: one per alternative (`budget <target> set … | budget
// <target> clear`), the command's own path and flags left out.
func usageArgs(cmd *ffcli.Command, path []string, n int) []string {
	usage := strings.TrimPrefix(cmd.ShortUsage, "agent-worker ")
	var out []string
	for _, alt := range splitTop(usage, '|') {
		toks := usageTokens(alt)
		for _, p := range path {
			if len(toks) > 0 && toks[0] == p {
				toks = toks[1:]
			}
		}
		var args []string
		for i := 0; i < len(toks); i++ {
			t := toks[i]
			switch {
			case strings.HasPrefix(t, "-"):
				// A bare flag's value placeholder (--reason R) is no argument.
				if i+1 < len(toks) && strings.ToUpper(toks[i+1]) == toks[i+1] {
					i++
				}
			case strings.HasPrefix(t, "[-"), t == "…", t == "...":
			default:
				args = append(args, t)
			}
		}
		if n < len(args) {
			out = append(out, args[n])
		}
	}
	return out
}

// usageTokens splits a usage line at the spaces outside brackets and quotes.
func usageTokens(s string) []string { return splitTop(s, ' ') }

// splitTop splits s at each sep outside <>, [] and double quotes, trimming
// the parts and dropping empty ones.
func splitTop(s string, sep rune) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	add := func(p string) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	for i, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '<' || r == '[':
			depth++
		case r == '>' || r == ']':
			depth--
		case r == sep && depth == 0:
			add(s[start:i])
			start = i + 1
		}
	}
	add(s[start:])
	return out
}

// values completes what a usage placeholder stands for: a literal word
// (set, clear) as itself, alternatives (auto|required|off) each, and
// named ones (agent, target, @wf[:tag], run-id, file) from the daemon or
// as file names.
func values(ctx context.Context, p string, src completionSource) (out []candidate, files bool) {
	inner := strings.Trim(p, "<>[]")
	if inner == p && isWord(p) {
		return []candidate{{value: p}}, false
	}
	if p == inner && strings.Contains(p, "|") {
		for _, w := range strings.Split(p, "|") {
			if isWord(w) {
				out = append(out, candidate{value: w})
			}
		}
		return out, false
	}
	var agents, workflows bool
	for _, opt := range splitTop(inner, '|') {
		o := strings.ToLower(strings.Trim(opt, "<>[]"))
		switch {
		case strings.Contains(o, "run-id"):
			out = append(out, call(ctx, src.runs)...)
		case strings.Contains(o, "question-id"):
			out = append(out, call(ctx, src.questions)...)
		case strings.Contains(o, "approval-id"):
			out = append(out, call(ctx, src.approvals)...)
		case strings.HasPrefix(o, "agent"):
			agents = true
		case o == "target":
			agents, workflows = true, true
		case strings.HasPrefix(o, "@wf"):
			workflows = true
		case strings.HasSuffix(o, ".yaml") || strings.Contains(o, "file") || o == "path" || o == "dir":
			files = true
		}
	}
	if agents {
		out = append(out, call(ctx, src.agents)...)
	}
	if workflows {
		out = append(out, call(ctx, src.workflows)...)
	}
	return out, files
}

func call(ctx context.Context, f func(context.Context) []candidate) []candidate {
	if f == nil {
		return nil
	}
	return f(ctx)
}

// isWord is a literal a usage line asks to be typed as is.
func isWord(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// matching keeps the candidates that begin with cur, each value once.
func matching(cs []candidate, cur string) []candidate {
	var out []candidate
	seen := map[string]bool{}
	for _, c := range cs {
		if strings.HasPrefix(c.value, cur) && !seen[c.value] {
			seen[c.value] = true
			out = append(out, c)
		}
	}
	return out
}

// daemonSource asks the daemon of e.home, only if one is already running:
// completion never starts one. It connects at most once.
func (e *env) daemonSource() completionSource {
	var c *api.Client
	var tried bool
	client := func(ctx context.Context) *api.Client {
		if !tried {
			tried = true
			c, _ = e.connect(ctx, false)
		}
		return c
	}
	return completionSource{
		agents: func(ctx context.Context) []candidate {
			c := client(ctx)
			if c == nil {
				return nil
			}
			as, _ := c.ListAgents(ctx)
			out := make([]candidate, 0, len(as))
			for _, a := range as {
				out = append(out, candidate{api.Target{Agent: a.Name, Workflow: a.Workflow, Tag: a.Tag}.Display(), string(a.State) + ", " + a.Backend})
			}
			return out
		},
		workflows: func(ctx context.Context) []candidate {
			c := client(ctx)
			if c == nil {
				return nil
			}
			ws, _ := c.ListWorkflows(ctx)
			out := make([]candidate, 0, len(ws))
			for _, w := range ws {
				out = append(out, candidate{api.Target{Workflow: w.Name, Tag: w.Tag}.Display(), string(w.State) + ": " + strings.Join(w.Agents, ", ")})
			}
			return out
		},
		runs: func(ctx context.Context) []candidate {
			c := client(ctx)
			if c == nil {
				return nil
			}
			rs, _ := c.Runs(ctx, api.RunQuery{Limit: 50})
			out := make([]candidate, 0, len(rs))
			for _, r := range rs {
				out = append(out, candidate{r.ID, agentName(r.Agent) + " " + string(r.State) + " " + r.StartedAt.Local().Format(time.DateTime)})
			}
			return out
		},
		questions: func(ctx context.Context) []candidate { return pendingQuestions(ctx, client(ctx), "question") },
		approvals: func(ctx context.Context) []candidate { return pendingQuestions(ctx, client(ctx), "approval") },
	}
}

// pendingQuestions are the ids of the pending questions of one kind.
func pendingQuestions(ctx context.Context, c *api.Client, kind string) []candidate {
	if c == nil {
		return nil
	}
	qs, _ := c.Questions(ctx, nil, false)
	var out []candidate
	for _, q := range qs {
		if q.Kind == kind {
			out = append(out, candidate{q.ID, agentName(q.Agent) + ": " + firstLine(q.Question, 60)})
		}
	}
	return out
}
