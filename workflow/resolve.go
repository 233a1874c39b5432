package workflow

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// varRE matches one ${{ expr }}; group 1 is the expression without the
// whitespace around it.
var varRE = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// Vars are the values ${{ }} variables take in one instance of a workflow.
type Vars struct {
	Workflow, Tag string                      // "" = the file's name, and "main"
	Params        map[string]string           // from ParseParams; a declared param absent here is ""
	Setup         map[string]string           // results of setup steps, by their as: name
	Env           func(string) (string, bool) // consulted before the daemon's own environment; may be nil
}

// Instance is a workflow resolved under a tag: everything interpolated,
// ready for the daemon to create agents and post the kickoff.
type Instance struct {
	Name, Tag, Path, Dir string
	Agents               []Agent // copies with SystemPrompt, WakeupPrompt, Env and MCPServers interpolated
	Context              Context // DocsDir interpolated and absolute
	Kickoff              string
	LoopGuard            int     // see File.LoopGuard
	Budget               *Budget // see File.Budget
	// Triggers have every variable of Message filled in but ${{ body.PATH }},
	// which RenderTrigger fills from each delivery.
	Triggers []Trigger
	// Workspace is File.Workspace: nil, or the git worktree setting.
	Workspace *Workspace
	// Notify is File.Notify: its URLs take no variables.
	Notify []Notify
}

// Resolve interpolates every string of f that may hold variables. It runs
// after RunSetup, so a missing env var or setup result is a plain error; all
// of them are reported together.
func Resolve(f *File, v Vars) (*Instance, error) {
	r := newResolver(f, v)
	in := &Instance{Name: r.name, Tag: r.tag, Path: f.Path, Dir: f.Dir, Context: f.Context, LoopGuard: f.LoopGuard, Budget: f.Budget, Workspace: f.Workspace}
	in.Notify = f.Notify
	in.Kickoff = r.expand("kickoff", f.Kickoff)
	for _, a := range f.Agents {
		where := "agent " + a.Name
		a.SystemPrompt = r.expand(where+" system_prompt", a.SystemPrompt)
		if n := len(a.SystemPrompt); n > MaxSystemPromptBytes {
			r.errs = append(r.errs, fmt.Errorf("%s:%d: %w", r.file(), a.Line,
				&SizeError{What: "agent " + a.Name + "'s system_prompt (with its ${{ }} values filled in)", Size: int64(n), Limit: MaxSystemPromptBytes}))
		}
		a.WakeupPrompt = r.expand(where+" wakeup_prompt", a.WakeupPrompt)
		a.Env = r.expandMap(where+" env", a.Env)
		servers := make([]MCPServer, len(a.MCPServers))
		for i, s := range a.MCPServers {
			w := where + " mcp server " + s.Name
			servers[i] = MCPServer{Name: s.Name, URL: r.expand(w, s.URL), Env: r.expandMap(w, s.Env), Headers: r.expandMap(w, s.Headers)}
			for _, c := range s.Command {
				servers[i].Command = append(servers[i].Command, r.expand(w, c))
			}
		}
		if a.MCPServers != nil {
			a.MCPServers = servers
		}
		if a.Provider != nil {
			pr := *a.Provider
			a.Provider = &pr
		}
		a.Sandbox = cloneSandbox(a.Sandbox) // paths were resolved by Parse
		a.Approvals = cloneApprovals(a.Approvals)
		in.Agents = append(in.Agents, a)
	}
	r.keepBody = true
	for _, t := range f.Triggers {
		t.Message = r.expand("webhook "+t.Name+" message", t.Message)
		if t.Report == nil {
			t.Report = f.Report
		}
		if t.Report != nil {
			rp := *t.Report
			where := "webhook " + t.Name + " report "
			rp.Document = r.expand(where+"document", rp.Document)
			rp.BaseURL = r.expand(where+"base_url", rp.BaseURL)
			rp.Project = r.expand(where+"project", rp.Project)
			rp.MergeRequest = r.expand(where+"merge_request", rp.MergeRequest)
			rp.Repo = r.expand(where+"repo", rp.Repo)
			rp.Number = r.expand(where+"number", rp.Number)
			t.Report = &rp
		}
		in.Triggers = append(in.Triggers, t)
	}
	r.keepBody = false
	if d := r.expand("context.documents.dir", f.Context.DocsDir); d != "" && !filepath.IsAbs(d) {
		in.Context.DocsDir = filepath.Join(f.Dir, d)
	} else {
		in.Context.DocsDir = d
	}
	if err := errors.Join(r.errs...); err != nil {
		return nil, fmt.Errorf("resolve workflow %s:%s: %w", r.name, r.tag, err)
	}
	return in, nil
}

// resolver looks variables up for one instance and collects what is
// missing, once per variable however often it is used.
type resolver struct {
	f          *File
	v          Vars
	name, tag  string
	errs       []error
	seen       map[string]bool
	declParams map[string]string // name -> default, for params the caller left out
	keepBody   bool              // leave ${{ body.PATH }} for RenderTrigger: expanding a trigger's message
}

func newResolver(f *File, v Vars) *resolver {
	r := &resolver{f: f, v: v, name: v.Workflow, tag: v.Tag, seen: map[string]bool{}, declParams: map[string]string{}}
	if r.name == "" {
		r.name = f.Name
	}
	if r.tag == "" {
		r.tag = "main"
	}
	for _, p := range f.Params {
		r.declParams[p.Name] = p.Default
	}
	return r
}

// file names the workflow file in messages.
func (r *resolver) file() string {
	if r.f.Path == "" {
		return "<workflow>"
	}
	return r.f.Path
}

func (r *resolver) expand(where, s string) string {
	if !strings.Contains(s, "${{") {
		return s
	}
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		expr := varRE.FindStringSubmatch(m)[1]
		if r.keepBody && strings.HasPrefix(expr, "body.") {
			return m
		}
		val, err := r.lookup(expr)
		if err != nil {
			if !r.seen[expr] {
				r.seen[expr] = true
				if where != "" {
					err = fmt.Errorf("%s: %w", where, err)
				}
				r.errs = append(r.errs, err)
			}
			return m
		}
		return val
	})
}

func (r *resolver) expandMap(where string, m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, s := range out {
		out[k] = r.expand(where+" "+k, s)
		if strings.ContainsRune(out[k], 0) { // Parse refuses a NUL written in the file
			r.errs = append(r.errs, fmt.Errorf("%s %s: a ${{ }} value holds a NUL byte, which no environment variable or header can", where, k))
		}
	}
	return out
}

func (r *resolver) lookup(expr string) (string, error) {
	ns, name, dotted := strings.Cut(expr, ".")
	switch {
	case !dotted:
		if val, ok := r.v.Setup[expr]; ok {
			return val, nil
		}
		return "", fmt.Errorf("setup variable %s has no value: run the setup step with as: %s first", expr, expr)
	case ns == "env":
		if r.v.Env != nil {
			if val, ok := r.v.Env(name); ok {
				return val, nil
			}
		}
		if val, ok := os.LookupEnv(name); ok {
			return val, nil
		}
		return "", fmt.Errorf("environment variable %s is not set: set it before starting the workflow", name)
	case ns == "params":
		if val, ok := r.v.Params[name]; ok {
			return val, nil
		}
		if def, ok := r.declParams[name]; ok {
			return def, nil
		}
		return "", fmt.Errorf("%s is not a param of this workflow: declare it under params:", name)
	case expr == "workflow.name":
		return r.name, nil
	case expr == "workflow.tag":
		return r.tag, nil
	case expr == "source.dir":
		return r.f.Dir, nil
	}
	return "", fmt.Errorf("unknown variable ${{ %s }}: use env.NAME, params.NAME, workflow.name, workflow.tag, source.dir or a setup step's as: name", expr)
}
