package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

// Mode is the daemon's --sandbox setting: what to do where the kernel
// cannot confine runs.
type Mode string

// Modes.
const (
	Required Mode = "required" // refuse runs where runs cannot be confined
	Auto     Mode = "auto"     // confine runs where the kernel can; run them unconfined, and say so, elsewhere
	Off      Mode = "off"      // never confine runs
)

// ParseMode reads --sandbox.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Required, Auto, Off:
		return m, nil
	case "":
		return Auto, nil
	}
	return "", api.Errorf(api.CodeInvalid, "--sandbox %q: write required, auto or off", s)
}

// Sandbox decides each run's policy, in one place, and starts plugin
// processes confined to it.
type Sandbox struct {
	mode   Mode
	status sb.Status
	home   string
	// system is what executing programs needs, read-only, for every run.
	system []string
	// devices may be read and written by every run.
	devices []string
	// protected are the folders whose programs the daemon executes (the
	// plugin folders, its own executable's): no run may write them.
	protected []string
}

// New returns the daemon's sandbox; status is what the kernel offers
// (sdk/sandbox.Probe; tests inject an unavailable one). home is the
// daemon's home, which no run may read but for its own directories.
func New(mode Mode, status sb.Status, home string) *Sandbox {
	s := &Sandbox{mode: mode, status: status, home: filepath.Clean(home)}
	s.system = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
		"/dev/urandom", "/dev/random"}
	// A resolver configuration linked out of /etc (systemd-resolved)
	// must resolve to something readable.
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !strings.HasPrefix(real, "/etc/") {
		s.system = append(s.system, real)
	}
	// git and other tools read the user's own configuration, never
	// credentials, from these.
	if h, err := os.UserHomeDir(); err == nil {
		s.system = append(s.system, filepath.Join(h, ".gitconfig"), filepath.Join(h, ".config", "git"))
	}
	s.devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm"}
	return s
}

// Protect names folders whose programs the daemon executes: every folder
// the plugin catalog searches and the daemon's own executable's. A run
// whose write paths hold one or lie inside one is refused (Policy), and
// a spare's base layer never grants one (Base): a run that could plant a
// binary there would have the daemon run it unconfined.
func (s *Sandbox) Protect(dirs ...string) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		s.protected = append(s.protected, filepath.Clean(d))
		if real, err := filepath.EvalSymlinks(d); err == nil && filepath.Clean(real) != filepath.Clean(d) {
			s.protected = append(s.protected, real)
		}
	}
}

// Mode is the daemon's setting.
func (s *Sandbox) Mode() Mode { return s.mode }

// Enforcing reports whether runs are confined: the kernel can and the
// daemon was not told not to.
func (s *Sandbox) Enforcing() bool { return s.mode != Off && s.status.Available() }

// Info is the sandbox as status, info, doctor and the console show it.
func (s *Sandbox) Info() api.SandboxInfo {
	switch {
	case s.mode == Off:
		return api.SandboxInfo{State: api.SandboxOff, Mode: string(s.mode), Detail: "runs are not confined (--sandbox off)"}
	case !s.status.Available():
		detail := s.status.Why + "; runs start unconfined (--sandbox auto)"
		if s.mode == Required {
			detail = s.status.Why + "; runs are refused (--sandbox required)"
		}
		return api.SandboxInfo{State: api.SandboxUnavailable, Mode: string(s.mode), Detail: detail}
	}
	return api.SandboxInfo{State: api.SandboxOn, Mode: string(s.mode), Detail: s.status.String(), ABI: s.status.ABI}
}

// Refusal is the error a run gets when the daemon requires a sandbox the
// kernel cannot give; nil when runs may start.
func (s *Sandbox) Refusal() error {
	if s.mode == Required && !s.status.Available() {
		return api.Errorf(api.CodeUnavailable, "the daemon requires a sandbox (--sandbox required) but runs cannot be confined here: %s. Start the daemon with --sandbox auto to run agents unconfined, or on a Linux kernel with Landlock", s.status.Why)
	}
	return nil
}

// Run is what a run's policy is decided from.
type Run struct {
	Backend string
	Config  backend.AgentConfig
	// Exe is the file the plugin process executes (its verified copy).
	Exe string
	// Project, Work, State and Tmp are the run's directories: where the
	// agent works, the run's private work dir, the agent's state for its
	// backend, the process's private temporary (and socket) directory.
	Project, Work, State, Tmp string
	// Repos are the workspace's repositories as the run gets them: each
	// granted read-only unless Write (a git one is the agent's own
	// worktree, with the parts of its repository's git directory a
	// commit writes).
	Repos []backend.Repo
	// Env is the plugin process's environment (the daemon's allow-listed
	// variables and the agent's env), where the model endpoints are.
	Env []string
	// DaemonPort is the port of the daemon's MCP server.
	DaemonPort uint16
}

// Policy decides the policy of one run; ok is false when the run is not
// to be confined (the daemon's --sandbox off or an unavailable kernel
// under auto, or the agent's mode: off). It fails when the run would have
// to be given the daemon's home, which Landlock cannot carve out of a
// directory that holds it.
func (s *Sandbox) Policy(r Run) (p sb.Policy, ok bool, err error) {
	if s.mode == Required && r.Config.Sandbox.Off() {
		return sb.Policy{}, false, api.Errorf(api.CodeInvalid, "the agent's sandbox is off (sandbox: {mode: off}) but the daemon requires every run confined (--sandbox required): remove mode: off from the agent, or start the daemon with --sandbox auto")
	}
	if !s.Enforcing() || r.Config.Sandbox.Off() {
		return sb.Policy{}, false, nil
	}
	p.Read = append(p.Read, s.system...)
	p.Read = append(p.Read, r.Exe)
	p.Read = append(p.Read, backendNeeds(r.Backend, r.Config, r.Env)...)
	p.Write = append(p.Write, s.devices...)
	p.Write = append(p.Write, r.Project, r.Work, r.State, r.Tmp)
	gitRW, gitRO := gitDirs(r.Project)
	p.Write = append(p.Write, gitRW...)
	p.Read = append(p.Read, gitRO...)
	for _, repo := range r.Repos {
		if !repo.Write {
			p.Read = append(p.Read, repo.Path)
			continue
		}
		p.Write = append(p.Write, repo.Path)
		gitRW, gitRO := gitDirs(repo.Path)
		p.Write = append(p.Write, gitRW...)
		p.Read = append(p.Read, gitRO...)
	}

	p.Net = sb.Net{Ports: []uint16{r.DaemonPort, 443}}
	p.Net.Ports = append(p.Net.Ports, endpointPorts(r.Config, r.Env)...)
	if c := r.Config.Sandbox; c != nil {
		p.Read = append(p.Read, c.Read...)
		p.Write = append(p.Write, c.Write...)
		if n := c.Network; n != nil {
			p.Net.All = n.All
			p.Net.Ports = append(p.Net.Ports, n.Ports...)
			p.ToolNet = sb.Net{All: n.All, Ports: slices.Clone(n.Ports)}
		}
	}
	p = tidy(p)
	for _, path := range append(slices.Clone(p.Write), p.Read...) {
		if s.holdsHome(path) {
			return sb.Policy{}, false, api.Errorf(api.CodeInvalid, "the sandbox cannot give the run %s: it holds the daemon's home %s (its token and database). Keep the workflow or the agent's sandbox paths out of that folder (start the daemon with another --home or AGENT_WORKER_HOME), or set sandbox: {mode: off} for the agent", path, s.home)
		}
	}
	for _, repo := range r.Repos {
		for _, w := range p.Write {
			if !repo.Write && within(w, repo.Path) {
				return sb.Policy{}, false, api.Errorf(api.CodeInvalid, "the sandbox cannot keep repository %s (%s) read-only: it lies inside %s, which the run may write. Move it out of that folder, or give it write: true", repo.Name, repo.Path, w)
			}
		}
	}
	for _, path := range p.Write {
		if dir, ok := s.executes(path); ok {
			return sb.Policy{}, false, api.Errorf(api.CodeInvalid, "the sandbox cannot let the run write %s: the daemon executes the programs in %s (a plugin folder or its own executable's), so a run that wrote there would run unconfined. Keep the workflow's folder and the agent's sandbox write paths apart from it (move the workflow, use workspace: {git: worktree}, or keep plugins elsewhere with --plugins-dir)", path, dir)
		}
	}
	return p, true, nil
}

// WithProcess is p given one process's own paths: the binary it executes
// (read) and its private temporary directory (read-write). A run's policy
// is decided once (Policy, without them) and completed per process.
func WithProcess(p sb.Policy, exe, tmp string) sb.Policy {
	p.Read = append(slices.Clone(p.Read), exe)
	p.Write = append(slices.Clone(p.Write), tmp)
	p.Net.Ports, p.ToolNet.Ports = slices.Clone(p.Net.Ports), slices.Clone(p.ToolNet.Ports) // tidy sorts in place
	return tidy(p)
}

// Base is the layer a warm spare of a backend starts under, before anyone
// knows which run it will serve: what any run of it may need, and never
// the daemon's own files or the rest of the user's home. dirs are the
// directories runs work in (the workspaces and worktrees roots, the
// directories of running workflows and their git directories); its
// network is left to the run's layer. ok is false when spares start
// unconfined.
func (s *Sandbox) Base(backendName, exe, tmp string, env []string, dirs Dirs) (p sb.Policy, ok bool) {
	if !s.Enforcing() {
		return sb.Policy{}, false
	}
	p.Read = append(p.Read, s.system...)
	p.Read = append(p.Read, exe)
	p.Read = append(p.Read, backendNeeds(backendName, backend.AgentConfig{}, env)...)
	p.Write = append(p.Write, s.devices...)
	p.Write = append(p.Write, tmp, filepath.Join(s.home, "runs"), filepath.Join(s.home, "state"),
		filepath.Join(s.home, "workspaces"), filepath.Join(s.home, "worktrees"))
	// A directory that holds the daemon's home is never in a base layer;
	// a run that would need it is refused (Policy).
	// Nor is a folder the daemon executes programs from, or one that holds
	// one or lies inside one.
	p.Write = append(p.Write, slices.DeleteFunc(slices.Clone(dirs.Write), func(d string) bool {
		_, executes := s.executes(d)
		return s.holdsHome(d) || executes
	})...)
	p.Read = append(p.Read, slices.DeleteFunc(slices.Clone(dirs.Read), s.holdsHome)...)
	p.Net, p.ToolNet = sb.Net{All: true}, sb.Net{All: true}
	return tidy(p), true
}

// within reports whether path is dir or lies inside it.
func within(dir, path string) bool {
	dir, path = filepath.Clean(dir), filepath.Clean(path)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// holdsHome reports whether path is the daemon's home or holds it.
func (s *Sandbox) holdsHome(path string) bool {
	path = filepath.Clean(path)
	return path == s.home || strings.HasPrefix(s.home, path+"/") || path == "/"
}

// executes reports the protected folder that path is, holds or lies
// inside, by its own name and by where its links lead.
func (s *Sandbox) executes(path string) (string, bool) {
	paths := []string{filepath.Clean(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		paths = append(paths, real)
	}
	for _, p := range paths {
		for _, d := range s.protected {
			if p == d || p == "/" || strings.HasPrefix(d, p+"/") || strings.HasPrefix(p, d+"/") {
				return d, true
			}
		}
	}
	return "", false
}

// Dirs are paths beyond the daemon's roots that runs may use.
type Dirs struct{ Read, Write []string }

// RepoGitDirs are the parts of a repository's git directory that commits
// in its worktrees write (rw: objects, refs, logs, the worktrees' admin
// directories) and the rest of it (ro: config, hooks, HEAD).
func RepoGitDirs(repo string) (rw, ro []string) {
	common := filepath.Join(repo, ".git")
	if fi, err := os.Stat(common); err != nil || !fi.IsDir() {
		return nil, nil
	}
	return []string{filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs"), filepath.Join(common, "worktrees")},
		[]string{common}
}

// tidy cleans, sorts and dedups p's lists, drops empty paths and write
// paths from the read list.
func tidy(p sb.Policy) sb.Policy {
	clean := func(paths []string) []string {
		var out []string
		for _, x := range paths {
			if x != "" {
				out = append(out, filepath.Clean(x))
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	p.Write = clean(p.Write)
	p.Read = slices.DeleteFunc(clean(p.Read), func(x string) bool { return slices.Contains(p.Write, x) })
	for _, n := range []*sb.Net{&p.Net, &p.ToolNet} {
		n.Ports = slices.DeleteFunc(n.Ports, func(x uint16) bool { return x == 0 })
		slices.Sort(n.Ports)
		n.Ports = slices.Compact(n.Ports)
		if n.All {
			n.Ports = nil
		}
	}
	return p
}

// gitDirs returns, for a git worktree at dir, the parts of its
// repository's git directory that a commit there writes (objects, refs,
// logs and the worktree's own admin directory) and the rest of it,
// read-only (config, hooks, HEAD), as Codex keeps them. A directory that
// is not a linked worktree yields nothing: its .git, if any, is inside it.
func gitDirs(dir string) (rw, ro []string) {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, nil // no .git, or a directory
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return nil, nil
	}
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(dir, admin)
	}
	common := admin
	if c, err := os.ReadFile(filepath.Join(admin, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(admin, common)
		}
	}
	common = filepath.Clean(common)
	return []string{filepath.Clean(admin), filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")},
		[]string{common}
}

// cliBackends are the first-party backends that run an agent CLI, with
// the command each looks for on PATH unless the agent's config names
// another (config key "cli"); the acp backend runs its config's command,
// and its presets (plugins/clis.ACPPresets) theirs unless config command
// names another.
var cliBackends = map[string]string{"claude": "claude", "codex": "codex", "cursor": "cursor-agent",
	"gemini": "gemini", "claude-acp": "claude-agent-acp", "codex-acp": "codex-acp", "opencode": "opencode"}

// acpBackends take their agent's command from config command.
var acpBackends = []string{"acp", "gemini", "claude-acp", "codex-acp", "opencode"}

// backendNeeds is what a backend needs to read beyond the system's
// directories: the installed package of its CLI (an npm package under a
// node_modules outside /usr, say) and the node that runs it.
func backendNeeds(backendName string, cfg backend.AgentConfig, env []string) []string {
	name, ok := cliBackends[backendName]
	if slices.Contains(acpBackends, backendName) {
		// The agent is the config's command, e.g. ["gemini", "--acp"];
		// a preset's own where config names none.
		var cmd []string
		if err := json.Unmarshal(cfg.Extra["command"], &cmd); err == nil && len(cmd) > 0 && cmd[0] != "" {
			name, ok = cmd[0], true
		}
	}
	if !ok {
		return nil
	}
	if raw, ok := cfg.Extra["cli"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil && s != "" {
			name = s
		}
	}
	path := lookPath(name, envValue(env, "PATH"))
	if path == "" {
		return nil
	}
	out := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		out = append(out, packageRoot(real))
		if node := lookPath("node", envValue(env, "PATH")); node != "" && shebangNode(real) {
			if realNode, err := filepath.EvalSymlinks(node); err == nil {
				out = append(out, filepath.Dir(realNode))
			}
		}
	}
	return out
}

// packageRoot is the node_modules directory a file is installed in (its
// package and the packages it loads), or the file's own directory.
func packageRoot(file string) string {
	if i := strings.LastIndex(file, "/node_modules/"); i >= 0 {
		return file[:i+len("/node_modules")]
	}
	return filepath.Dir(file)
}

// shebangNode reports a script run by node.
func shebangNode(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return strings.HasPrefix(line, "#!") && strings.Contains(line, "node")
}

// lookPath finds name in path (a PATH value), or name itself when it
// has a slash.
func lookPath(name, path string) string {
	if strings.Contains(name, "/") {
		if filepath.IsAbs(name) {
			return name
		}
		return ""
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// endpointPorts are the TCP ports of the model endpoints and MCP servers
// a run's backend may talk to: every *_BASE_URL in its environment, the
// agent's provider and its own MCP servers; and the OTLP collector its
// CLI's own telemetry sends to (OTEL_EXPORTER_OTLP_[…_]ENDPOINT).
func endpointPorts(cfg backend.AgentConfig, env []string) []uint16 {
	var urls []string
	endpoint := func(k string) bool {
		return strings.HasSuffix(k, "_BASE_URL") || strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(k, "ENDPOINT")
	}
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); endpoint(k) {
			urls = append(urls, v)
		}
	}
	for k, v := range cfg.Env {
		if endpoint(k) {
			urls = append(urls, v)
		}
	}
	if cfg.Provider != nil {
		urls = append(urls, cfg.Provider.BaseURL)
	}
	for _, s := range cfg.MCPServers {
		urls = append(urls, s.URL)
	}
	var out []uint16
	for _, raw := range urls {
		if port := urlPort(raw); port != 0 {
			out = append(out, port)
		}
	}
	return out
}

// urlPort is the TCP port a URL reaches: its own, or its scheme's.
func urlPort(raw string) uint16 {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return 0
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0
		}
		return uint16(n)
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// envValue is the value of name in a KEY=value list; the last one wins,
// as in a process environment built by appending.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v = val
		}
	}
	return v
}

// String says a policy in one line, for the daemon's log.
func String(p sb.Policy) string {
	return fmt.Sprintf("read %d paths, write %v, network %s, tools %s", len(p.Read), p.Write, p.Net, p.ToolNet)
}
