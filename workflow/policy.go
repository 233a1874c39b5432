package workflow

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Policy is what a workflow lets its runs do, gathered in one place so
// that the daemon can tell an edit that widens it (held for the owner to
// accept: a run may write the file) from one that does not (applied at
// once). It is computed from the file alone, before any ${{ }} value is
// filled in, so the stored config and a new version compare the same way.
type Policy struct {
	Agents map[string]AgentPolicy
	// Workspace: each agent works in its own git worktree rather than in
	// the workflow's folder (which holds the file itself).
	Workspace bool
	// Repos are the workspace's repositories by name: the path as the
	// file writes it, and whether runs may write it directly.
	Repos map[string]RepoPolicy
	// Notify are the webhook URLs the workflow's events go to.
	Notify []string
	// Documents and DocsDir are the documents provider and the folder the
	// daemon writes the team's documents in, as the file says them: what
	// an agent's team_doc_write reaches, written by the daemon itself.
	Documents, DocsDir string
	// Budget is the workflow's cap; LoopGuard its loop guard (0 off).
	Budget    *Budget
	LoopGuard int
}

// AgentPolicy is one agent's part of a Policy.
type AgentPolicy struct {
	Backend string
	// CLI is the program a CLI backend runs (config: {cli: ...}); "" is
	// the backend's own default.
	CLI string
	// Permissions are the config keys a CLI backend's own permissions are
	// set with (PermissionKeys), as written.
	Permissions map[string]string
	// SandboxOff: the agent's runs are not confined (sandbox: {mode: off}).
	SandboxOff  bool
	Read, Write []string
	// Network is what the agent's sandbox lets it reach beyond the
	// daemon's port and model endpoints: nil none.
	Network *backend.SandboxNetwork
	// Env is the agent's env: by name. Values are compared, never shown:
	// they may be secrets.
	Env map[string]string
	// MCPServers are the agent's own MCP servers, by name: the command
	// (with its arguments) or URL each starts or reaches.
	MCPServers map[string]string
	// Provider is the base URL of the agent's endpoint, "" the default.
	Provider string
	// Tools are the workspace tool sets; nil is the backend's default, all.
	Tools     []string
	Approvals backend.ApprovalPolicy
	CanSpawn  bool
	// MaxSpawned counts only when CanSpawn.
	MaxSpawned int
	Budget     *Budget
	// MaxSteps and Timeout limit one run; 0 is the backend's default.
	MaxSteps int
	Timeout  time.Duration
}

// PermissionKeys are the config: keys with which a CLI backend's own
// permissions are set: claude's allowed_tools (tools it runs without
// asking), codex's sandbox_mode. Any change of them counts as widening:
// what is more is the CLI's to say.
var PermissionKeys = []string{"allowed_tools", "sandbox_mode"}

// RepoPolicy is what runs may do with one repository of the workspace.
type RepoPolicy struct {
	Path string
	// Write: runs write the directory itself; Worktree: each agent writes
	// a worktree of its own.
	Write, Worktree bool
}

func (r RepoPolicy) access() string {
	switch {
	case r.Write:
		return "write"
	case r.Worktree:
		return "commit to in their own worktrees"
	}
	return "read"
}

// PolicyOf is f's policy.
func PolicyOf(f *File) Policy {
	p := Policy{Agents: make(map[string]AgentPolicy, len(f.Agents)), Workspace: f.Workspace != nil && f.Workspace.Git == GitWorktree, Budget: f.Budget, LoopGuard: f.LoopGuard,
		Documents: f.Context.Documents, DocsDir: f.Context.DocsDir}
	for _, n := range f.Notify {
		p.Notify = append(p.Notify, n.Webhook)
	}
	slices.Sort(p.Notify)
	if f.Workspace != nil {
		for _, r := range f.Workspace.Repos {
			if p.Repos == nil {
				p.Repos = map[string]RepoPolicy{}
			}
			p.Repos[r.Name] = RepoPolicy{Path: r.Path, Write: r.Write && r.Git == "", Worktree: r.Git == GitWorktree}
		}
	}
	for _, a := range f.Agents {
		ap := AgentPolicy{Backend: a.Backend, Env: maps.Clone(a.Env), Tools: slices.Clone(a.Tools), CanSpawn: a.CanSpawn, Budget: a.Budget,
			MaxSteps: a.MaxSteps, Timeout: a.Timeout}
		if a.CanSpawn {
			ap.MaxSpawned = a.MaxSpawned
		}
		if raw, ok := a.Config["cli"]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			ap.CLI = s
		}
		for _, k := range PermissionKeys {
			if raw, ok := a.Config[k]; ok {
				if ap.Permissions == nil {
					ap.Permissions = map[string]string{}
				}
				ap.Permissions[k] = string(raw)
			}
		}
		if s := a.Sandbox; s != nil {
			ap.SandboxOff = s.Off()
			ap.Read, ap.Write = slices.Sorted(slices.Values(s.Read)), slices.Sorted(slices.Values(s.Write))
			if s.Network != nil {
				ap.Network = &backend.SandboxNetwork{All: s.Network.All, Ports: slices.Sorted(slices.Values(s.Network.Ports))}
			}
		}
		for _, m := range a.MCPServers {
			if ap.MCPServers == nil {
				ap.MCPServers = map[string]string{}
			}
			ap.MCPServers[m.Name] = m.URL
			if len(m.Command) > 0 {
				ap.MCPServers[m.Name] = strings.Join(m.Command, " ")
			}
		}
		if a.Provider != nil {
			ap.Provider = a.Provider.BaseURL
		}
		if a.Approvals != nil {
			ap.Approvals = *cloneApprovals(a.Approvals)
			ap.Approvals.Timeout = "" // when a gate gives up, the action is refused: a timeout never lets more through
		}
		p.Agents[a.Name] = ap
	}
	return p
}

// Widens says, one reason a line, how new lets runs do more than old: an
// agent unconfined, a path, a port, a backend or a program, an env
// variable, an MCP server or an endpoint it did not have, a gate gone, a
// limit raised or lifted, a webhook added, agents out of their worktrees,
// the documents elsewhere.
// nil means new is old or narrower. A new agent is compared with an
// agent that asks for nothing, but for its backend, which widens only if
// no agent of old has it.
func Widens(old, new Policy) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if old.Workspace && !new.Workspace {
		add("workspace: removed: agents work in the workflow's folder, beside its file, instead of their own git worktrees")
	}
	for _, name := range slices.Sorted(maps.Keys(new.Repos)) {
		n, o := new.Repos[name], old.Repos[name]
		switch _, had := old.Repos[name]; {
		case !had || n.Path != o.Path:
			add("workspace: repository %s at %s, which runs may %s", name, n.Path, n.access())
		case n.Write && !o.Write:
			add("workspace: repository %s is writable (was read-only)", name)
		case o.Worktree && !n.Worktree && n.Write:
			add("workspace: repository %s is written directly instead of through the agents' own worktrees", name)
		}
	}
	if new.Documents != old.Documents && !slices.Contains([]string{"", "file", "sqlite"}, new.Documents) { // the built-in ones keep to the documents dir
		add("context: documents provider %s (was %s)", orDefault(new.Documents), orDefault(old.Documents))
	}
	if new.DocsDir != old.DocsDir {
		add("context: documents dir %s (was %s): the daemon writes what agents put in documents there", orDefault(new.DocsDir), orDefault(old.DocsDir))
	}
	for _, u := range new.Notify {
		if !slices.Contains(old.Notify, u) {
			add("notify: events go to a new webhook %s", u)
		}
	}
	for _, r := range budgetWidens(old.Budget, new.Budget) {
		add("the workflow's budget: %s", r)
	}
	if old.LoopGuard > 0 && (new.LoopGuard == 0 || new.LoopGuard > old.LoopGuard) {
		add("loop_guard: max_rounds %s (was %d)", rounds(new.LoopGuard), old.LoopGuard)
	}
	backends := map[string]bool{}
	for _, a := range old.Agents {
		backends[a.Backend] = true
	}
	for _, name := range slices.Sorted(maps.Keys(new.Agents)) {
		na := new.Agents[name]
		oa, ok := old.Agents[name]
		if !ok {
			oa = AgentPolicy{Backend: na.Backend}
			if !backends[na.Backend] {
				add("agent %s: new, with backend %s, which no agent had", name, na.Backend)
			}
		}
		for _, r := range agentWidens(oa, na) {
			add("agent %s: %s", name, r)
		}
	}
	return out
}

// agentWidens is Widens for one agent.
func agentWidens(o, n AgentPolicy) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if n.Backend != o.Backend {
		add("backend %s (was %s)", n.Backend, o.Backend)
	}
	if n.CLI != o.CLI {
		add("config cli %s (was %s)", orDefault(n.CLI), orDefault(o.CLI))
	}
	for _, k := range slices.Sorted(maps.Keys(n.Permissions)) {
		if v, ok := o.Permissions[k]; !ok || v != n.Permissions[k] {
			add("config %s %s (was %s)", k, n.Permissions[k], orDefault(o.Permissions[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Permissions)) {
		if _, ok := n.Permissions[k]; !ok {
			add("config %s: the backend's default (was %s)", k, o.Permissions[k])
		}
	}
	if n.SandboxOff && !o.SandboxOff {
		add("sandbox mode off: its runs are not confined")
	}
	for _, x := range n.Read {
		if !slices.Contains(o.Read, x) && !slices.Contains(o.Write, x) {
			add("sandbox read adds %s", x)
		}
	}
	for _, x := range n.Write {
		if !slices.Contains(o.Write, x) {
			add("sandbox write adds %s", x)
		}
	}
	switch {
	case n.Network == nil:
	case n.Network.All && (o.Network == nil || !o.Network.All):
		add("sandbox network all")
	case !n.Network.All && (o.Network == nil || !o.Network.All):
		for _, port := range n.Network.Ports {
			if o.Network == nil || !slices.Contains(o.Network.Ports, port) {
				add("sandbox network adds port %d", port)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.Env)) {
		if v, ok := o.Env[k]; !ok {
			add("env adds %s", k)
		} else if v != n.Env[k] {
			add("env %s changes", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.MCPServers)) {
		if v, ok := o.MCPServers[k]; !ok || v != n.MCPServers[k] {
			add("mcp_servers %s: %s", k, n.MCPServers[k])
		}
	}
	if n.Provider != o.Provider {
		add("provider base_url %s (was %s)", orDefault(n.Provider), orDefault(o.Provider))
	}
	switch {
	case n.Tools == nil && o.Tools != nil:
		add("tools: all (was %s)", toolList(o.Tools))
	case n.Tools != nil && o.Tools != nil:
		for _, t := range n.Tools {
			if !slices.Contains(o.Tools, t) {
				add("tools adds %s", t)
			}
		}
	}
	oa, na := o.Approvals, n.Approvals
	if oa.Integrate && !na.Integrate {
		add("approvals: integrate no longer waits for a person")
	}
	if oa.Spawn && !na.Spawn {
		add("approvals: spawn no longer waits for a person")
	}
	for _, s := range oa.Shell {
		if !slices.Contains(na.Shell, s) {
			add("approvals: shell %q no longer waits for a person", s)
		}
	}
	for _, t := range oa.Tools {
		if !slices.Contains(na.Tools, t) {
			add("approvals: tool %s no longer waits for a person", t)
		}
	}
	if n.CanSpawn && !o.CanSpawn {
		add("can_spawn: true (up to %d agents)", n.MaxSpawned)
	} else if n.CanSpawn && n.MaxSpawned > o.MaxSpawned {
		add("max_spawned %d (was %d)", n.MaxSpawned, o.MaxSpawned)
	}
	for _, r := range budgetWidens(o.Budget, n.Budget) {
		add("budget: %s", r)
	}
	if o.MaxSteps > 0 && (n.MaxSteps == 0 || n.MaxSteps > o.MaxSteps) {
		add("max_steps %s (was %d)", orDefault(strings.TrimPrefix(strconv.Itoa(n.MaxSteps), "0")), o.MaxSteps)
	}
	if o.Timeout > 0 && (n.Timeout == 0 || n.Timeout > o.Timeout) {
		add("timeout %s (was %s)", orDefault(durationText(n.Timeout)), o.Timeout)
	}
	return out
}

// durationText is d as a file writes it, "" for none.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// budgetWidens says how n caps less than o.
func budgetWidens(o, n *Budget) []string {
	if o == nil {
		return nil
	}
	if n == nil {
		return []string{"removed"}
	}
	var out []string
	if o.USD != nil && (n.USD == nil || *n.USD > *o.USD) {
		out = append(out, fmt.Sprintf("usd %s (was %g)", limit(n.USD), *o.USD))
	}
	if o.Tokens != nil && (n.Tokens == nil || *n.Tokens > *o.Tokens) {
		out = append(out, fmt.Sprintf("tokens %s (was %d)", limit(n.Tokens), *o.Tokens))
	}
	if o.Runs != nil && (n.Runs == nil || *n.Runs > *o.Runs) {
		out = append(out, fmt.Sprintf("runs %s (was %d)", limit(n.Runs), *o.Runs))
	}
	if o.Hard && !n.Hard {
		out = append(out, "no longer hard: a run in flight may finish past it")
	}
	return out
}

func limit[T int64 | float64](v *T) string {
	if v == nil {
		return "unlimited"
	}
	return fmt.Sprint(*v)
}

func rounds(n int) string {
	if n == 0 {
		return "0 (off)"
	}
	return fmt.Sprint(n)
}

func orDefault(s string) string {
	if s == "" {
		return "the default"
	}
	return s
}

func toolList(ts []string) string {
	if len(ts) == 0 {
		return "none"
	}
	return strings.Join(ts, ", ")
}
