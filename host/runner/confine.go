package runner

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/store"
)

// confinement is how one plugin process is confined: the policy it is
// started under, before its first instruction (zero: none).
// A run's policy depends on the process's private directory (its TMPDIR
// and socket), which exists only once the process is being started, so
// it is a function of that directory.
type confinement func(exe, tmp string) (sb.Policy, bool, error)

// unconfined starts a process as it is.
func unconfined(string, string) (sb.Policy, bool, error) { return sb.Policy{}, false, nil }

// runConfinement is the policy of one run, given its directories: nil
// when the daemon has no sandbox.
func (s *Supervisor) runConfinement(agent store.Agent, rs runSetup) confinement {
	box := s.cfg.Sandbox
	if box == nil {
		return unconfined
	}
	// Decided once per run (it reads the file system: the CLI on PATH, a
	// worktree's .git), then given each process's own binary and private
	// directory, which are the process's, never the home's.
	decide := sync.OnceValues(func() (sb.Policy, error) {
		env := append(catalog.Env(), agent.Config.EnvList()...)
		for k, v := range s.cfg.Tracing.CollectorEnv() { // the collector a CLI's own telemetry sends to
			env = append(env, k+"="+v)
		}
		p, ok, err := box.Policy(sandbox.Run{Backend: agent.Backend, Config: agent.Config,
			Project: rs.projectDir, Repos: rs.repos, Work: rs.workDir, State: rs.stateDir, Env: env, DaemonPort: s.daemonPort()})
		if err == nil && !ok {
			p = sb.Policy{}
		}
		return p, err
	})
	return func(exe, tmp string) (sb.Policy, bool, error) {
		p, err := decide()
		if err != nil || p.IsZero() {
			return sb.Policy{}, false, err
		}
		return sandbox.WithProcess(p, exe, tmp), true, nil
	}
}

// spareConfinement is the base layer of a warm spare of p: what any run
// of it may need, never the daemon's own files.
func (s *Supervisor) spareConfinement(ctx context.Context, p api.Plugin) confinement {
	box := s.cfg.Sandbox
	if box == nil || !box.Enforcing() {
		return unconfined
	}
	dirs := s.runDirs(ctx)
	env := catalog.Env()
	return func(exe, tmp string) (sb.Policy, bool, error) {
		pol, ok := box.Base(p.Name, exe, tmp, env, dirs)
		return pol, ok, nil
	}
}

// runDirs are what runs of any agent may need beyond the daemon's roots:
// every workflow's directory and its git workspace's repository, and the
// paths agents' own policies add.
func (s *Supervisor) runDirs(ctx context.Context) sandbox.Dirs {
	def, ok := s.definedDirs(ctx)
	if !ok {
		return sandbox.Dirs{}
	}
	d := sandbox.Dirs{Write: slices.Clone(def.write), Read: slices.Clone(def.read)}
	for _, repo := range def.repos {
		rw, ro := sandbox.RepoGitDirs(repo) // a repository may appear later
		d.Write, d.Read = append(d.Write, rw...), append(d.Read, ro...)
	}
	return d
}

// definedDirs is what the definitions of workflows and agents add to runs'
// directories: workflow directories, workspace repositories, and agents'
// own sandbox paths. Every spare start needs them, and reading every
// workflow and agent costs as much as the daemon has; they are kept until
// a write changes a definition (store.ConfigGeneration).
type definedDirs struct {
	gen                uint64
	read, write, repos []string
}

func (s *Supervisor) definedDirs(ctx context.Context) (definedDirs, bool) {
	gen, keep := s.db.ConfigGeneration()
	s.dirsMu.Lock()
	cached := s.dirs
	s.dirsMu.Unlock()
	if keep && cached != nil && cached.gen == gen {
		return *cached, true
	}
	d := definedDirs{gen: gen}
	wfs, err := s.db.ListWorkflows(ctx)
	if err != nil {
		s.log.Warn("list workflows for the spares' sandbox; runs of their agents start cold", "error", err)
		return d, false
	}
	for _, wf := range wfs {
		if wf.Workdir != "" {
			d.write = append(d.write, wf.Workdir)
		}
		if wf.WorkspaceRepo != "" {
			d.repos = append(d.repos, wf.WorkspaceRepo)
		}
		for _, r := range wf.Repos {
			switch {
			case r.Git:
				d.repos = append(d.repos, r.Top) // its worktrees are under the daemon's worktrees root
			case r.Write:
				d.write = append(d.write, r.Path)
			default:
				d.read = append(d.read, r.Path)
			}
		}
	}
	agents, err := s.db.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		s.log.Warn("list agents for the spares' sandbox", "error", err)
		return d, false
	}
	for _, a := range agents {
		if c := a.Config.Sandbox; c != nil {
			d.read, d.write = append(d.read, c.Read...), append(d.write, c.Write...)
		}
	}
	if keep {
		s.dirsMu.Lock()
		s.dirs = &d
		s.dirsMu.Unlock()
	}
	return d, true
}

// need is what a run asks of a spare: its policy apart from the process's
// own paths (its binary and private directory, which every spare's base
// layer grants), decided once, before the pool's lock is taken.
type need struct {
	policy   sb.Policy
	confined bool
	err      error // the run fails when it starts its own process
}

func needOf(run confinement) need {
	p, confined, err := run("", "")
	return need{p, confined, err}
}

// fits reports whether spare process x of plugin p can serve a run that needs n:
// a spare's base layer can only be narrowed, so the run's policy must lie
// within it, and the plugin must narrow itself (the sdk's capability). An
// unconfined run needs an unconfined spare.
func (n need) fits(x *process, p api.Plugin) bool {
	switch {
	case n.err != nil:
		return false
	case !n.confined:
		return !x.confined
	}
	return x.confined && slices.Contains(p.Capabilities, plugin.CapabilitySandbox) && n.policy.Within(x.policy)
}

// daemonPort is the TCP port of the daemon's MCP server, which every run
// may reach.
func (s *Supervisor) daemonPort() uint16 {
	u, err := url.Parse(s.mcpURL())
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(u.Port(), 10, 16)
	return uint16(n)
}
