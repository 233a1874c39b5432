package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

var landlock7 = sb.Status{ABI: 7}

// A run's policy: its own directories read-write, the system read-only,
// the daemon's port, its model endpoints and the OTLP collector its CLI's
// telemetry sends to on the network, what the agent adds, and never the
// daemon's home.
func TestPolicyOfARun(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	box := New(Auto, landlock7, home)
	run := Run{Backend: "sdk", Exe: filepath.Join(home, "plugins.verified", "abc"),
		Project: "/work/team", Work: filepath.Join(home, "runs", "run_1"), State: filepath.Join(home, "state", "team", "main", "a", "sdk"), Tmp: "/tmp/aw-1-run-2",
		Env:        []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:7070", "PATH=/usr/bin", "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"},
		DaemonPort: 5099,
		Config: backend.AgentConfig{Env: map[string]string{"OPENAI_BASE_URL": "https://llm.example:8443/v1"},
			MCPServers: map[string]backend.MCPServerConfig{"web": {URL: "http://localhost:9000/mcp"}},
			Sandbox:    &backend.SandboxConfig{Read: []string{"/data/sets"}, Write: []string{"/work/out"}, Network: &backend.SandboxNetwork{Ports: []uint16{8080}}}},
	}
	p, ok, err := box.Policy(run)
	if err != nil || !ok {
		t.Fatalf("Policy = %v, %v", ok, err)
	}
	for _, w := range []string{"/work/team", run.Work, run.State, run.Tmp, "/work/out", "/dev/null"} {
		if !p.CanWrite(w) {
			t.Errorf("the run cannot write %s: %+v", w, p)
		}
	}
	for _, r := range []string{"/usr/bin/git", "/etc/ssl/certs", run.Exe, "/data/sets/a.csv"} {
		if !p.CanRead(r) {
			t.Errorf("the run cannot read %s", r)
		}
	}
	for _, no := range []string{filepath.Join(home, "daemon.json"), filepath.Join(home, "agent-worker.db"), filepath.Join(home, "plugins.verified", "other"),
		filepath.Join(home, "workspaces", "team", "main", "b"), filepath.Join(home, "runs", "run_2")} {
		if p.CanRead(no) {
			t.Errorf("the run can read %s", no)
		}
	}
	if want := []uint16{443, 4318, 5099, 7070, 8080, 8443, 9000}; !slices.Equal(p.Net.Ports, want) {
		t.Errorf("network ports = %v, want %v", p.Net.Ports, want)
	}
	if want := []uint16{8080}; !slices.Equal(p.ToolNet.Ports, want) || p.ToolNet.All {
		t.Errorf("tool ports = %+v, want only the agent's %v", p.ToolNet, want)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}

	// A spare of the same backend can be narrowed to it.
	base, ok := box.Base("sdk", run.Exe, run.Tmp, run.Env, Dirs{Write: []string{"/work/team", "/work/out"}, Read: []string{"/data/sets"}})
	if !ok || !p.Within(base) {
		t.Errorf("the run's policy is not within a spare's base:\nrun  %+v\nbase %+v", p, base)
	}
	if base.CanRead(filepath.Join(home, "daemon.json")) {
		t.Error("a spare's base grants daemon.json")
	}
}

// The daemon's home is never given to a run: a workflow directory that
// holds it is refused, with what to do, and left out of spares' bases.
func TestPolicyRefusesTheDaemonHome(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	home := filepath.Join(parent, ".agent-worker")
	box := New(Auto, landlock7, home)
	_, _, err := box.Policy(Run{Backend: "mock", Exe: "/x", Project: parent, Work: filepath.Join(home, "runs", "r"), Tmp: "/tmp/t", DaemonPort: 1})
	if err == nil || !strings.Contains(err.Error(), "holds the daemon's home") || !strings.Contains(err.Error(), "mode: off") {
		t.Errorf("Policy of a run in the home's parent = %v; want a refusal that says what to do", err)
	}
	base, _ := box.Base("mock", "/x", "/tmp/t", nil, Dirs{Write: []string{parent, "/work/team"}})
	if base.CanRead(filepath.Join(home, "daemon.json")) || !base.CanWrite("/work/team") {
		t.Errorf("a spare's base = %+v; want the home's parent left out, the other directory kept", base)
	}
}

// Off, unavailable and an agent's mode: off leave a run unconfined; only
// required refuses it, and under required an agent's mode: off is refused
// too: the owner asked that no run go unconfined.
func TestModes(t *testing.T) {
	t.Parallel()
	missing := sb.Status{Why: "no Landlock here"}
	run := Run{Backend: "mock", Exe: "/x", Project: "/work", Work: "/w", Tmp: "/t", DaemonPort: 1}
	for name, tc := range map[string]struct {
		box      *Sandbox
		agentOff bool
		confined bool
		refused  bool
		// offRefused: Policy refuses the agent's mode: off.
		offRefused bool
	}{
		"auto with Landlock":       {box: New(Auto, landlock7, "/h"), confined: true},
		"auto without":             {box: New(Auto, missing, "/h")},
		"required without":         {box: New(Required, missing, "/h"), refused: true},
		"off":                      {box: New(Off, landlock7, "/h")},
		"an agent's mode: off":     {box: New(Auto, landlock7, "/h"), agentOff: true},
		"required and mode: off":   {box: New(Required, landlock7, "/h"), agentOff: true, offRefused: true},
		"required, none and off":   {box: New(Required, missing, "/h"), agentOff: true, offRefused: true, refused: true},
		"required with Landlock":   {box: New(Required, landlock7, "/h"), confined: true},
		"required with old kernel": {box: New(Required, sb.Status{ABI: 3}, "/h"), confined: true},
	} {
		r := run
		if tc.agentOff {
			r.Config.Sandbox = &backend.SandboxConfig{Mode: backend.SandboxOff}
		}
		_, confined, err := tc.box.Policy(r)
		if confined != tc.confined || (err != nil) != tc.offRefused {
			t.Errorf("%s: confined %v (%v), want %v, refused %v", name, confined, err, tc.confined, tc.offRefused)
		}
		if tc.offRefused && !strings.Contains(fmt.Sprint(err), "--sandbox required") {
			t.Errorf("%s: the refusal %q does not say why", name, err)
		}
		if refused := tc.box.Refusal() != nil; refused != tc.refused {
			t.Errorf("%s: refused %v, want %v", name, refused, tc.refused)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil || !strings.Contains(err.Error(), "required, auto or off") {
		t.Errorf("ParseMode(sometimes) = %v", err)
	}
}

// A linked git worktree gets the parts of its repository's git
// directory that a commit writes, and the rest read-only.
func TestGitDirsOfAWorktree(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git, which is not installed: %v", err)
	}
	repo, tree := t.TempDir(), filepath.Join(t.TempDir(), "alice")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "first"},
		{"worktree", "add", "-q", "-b", "alice", tree}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo, _ = filepath.EvalSymlinks(repo)
	rw, ro := gitDirs(tree)
	git := filepath.Join(repo, ".git")
	want := []string{filepath.Join(git, "worktrees", "alice"), filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs")}
	if !slices.Equal(rw, want) || !slices.Equal(ro, []string{git}) {
		t.Errorf("gitDirs = rw %v, ro %v; want rw %v, ro [%s]", rw, ro, want, git)
	}
	if rw, ro := gitDirs(repo); rw != nil || ro != nil {
		t.Errorf("gitDirs of the main checkout = %v, %v; want nothing (its .git is inside it)", rw, ro)
	}
	if _, err := os.Stat(filepath.Join(git, "worktrees", "alice")); err != nil {
		t.Fatal(err)
	}
}

// A run never gets write access to a folder the daemon executes programs
// from: a plugin folder or the daemon's own executable's, whether the
// write path is that folder, holds it, lies inside it, or links to it.
// Reading is fine; a spare's base leaves such folders out.
func TestPolicyRefusesPluginFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin, drop := filepath.Join(root, "repo", "bin"), filepath.Join(root, "repo", "plugins.d")
	for _, d := range []string{bin, drop, filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "elsewhere", "to-bin")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	box := New(Auto, landlock7, filepath.Join(root, "home"))
	box.Protect(bin, drop)
	run := Run{Backend: "mock", Exe: "/x", Project: filepath.Join(root, "work"), Work: "/w", Tmp: "/t", DaemonPort: 1}
	for name, tc := range map[string]struct {
		project string
		write   []string
		read    []string
		refused string // the protected folder named, "" for allowed
	}{
		"the executable's folder":        {write: []string{bin}, refused: bin},
		"inside a plugin folder":         {write: []string{filepath.Join(drop, "sub")}, refused: drop},
		"a project that holds plugins.d": {project: filepath.Join(root, "repo"), refused: bin},
		"a link to the executable's":     {write: []string{link}, refused: bin},
		"a sibling folder":               {write: []string{filepath.Join(root, "repo", "src")}},
		"reading a plugin folder":        {read: []string{drop, bin}},
	} {
		r := run
		if tc.project != "" {
			r.Project = tc.project
		}
		r.Config.Sandbox = &backend.SandboxConfig{Write: tc.write, Read: tc.read}
		_, ok, err := box.Policy(r)
		switch {
		case tc.refused == "" && (err != nil || !ok):
			t.Errorf("%s: refused (%v), want allowed", name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), "executes the programs in "+tc.refused) || !strings.Contains(err.Error(), "--plugins-dir")):
			t.Errorf("%s: Policy = %v; want a refusal naming %s and what to do", name, err, tc.refused)
		}
	}
	base, _ := box.Base("mock", "/x", "/tmp/t", nil, Dirs{Write: []string{filepath.Join(root, "repo"), drop, filepath.Join(root, "repo", "src")}})
	if base.CanWrite(filepath.Join(drop, "agent-worker-backend-x")) || base.CanWrite(filepath.Join(bin, "agent-worker-backend-x")) || !base.CanWrite(filepath.Join(root, "repo", "src", "a.go")) {
		t.Errorf("a spare's base = %+v; want the plugin folders and what holds them left out, the other folder kept", base.Write)
	}
}

// workspace.repos: a read-only repository is readable and not writable, a
// writable one both; one inside a folder the run writes cannot be kept
// read-only, and the run is refused rather than told a lie.
func TestPolicyOfRepos(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	box := New(Auto, landlock7, home)
	run := Run{Backend: "mock", Project: "/work/team", Work: filepath.Join(home, "runs", "r"), State: filepath.Join(home, "state", "s"), Tmp: "/tmp/aw-r",
		Repos: []backend.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: filepath.Join(home, "worktrees", "team", "main", "a@app"), Write: true}}}
	p, ok, err := box.Policy(run)
	if err != nil || !ok {
		t.Fatalf("Policy = %v, %v", ok, err)
	}
	if !p.CanRead("/src/lib/go.mod") || p.CanWrite("/src/lib/go.mod") {
		t.Errorf("read-only lib: read %v, write %v; want read only", p.CanRead("/src/lib/go.mod"), p.CanWrite("/src/lib/go.mod"))
	}
	if app := filepath.Join(run.Repos[1].Path, "main.go"); !p.CanWrite(app) {
		t.Errorf("the run cannot write its worktree of app: %s", app)
	}
	run.Repos = []backend.Repo{{Name: "vendor", Path: "/work/team/vendor"}}
	if _, _, err := box.Policy(run); err == nil || !strings.Contains(err.Error(), "cannot keep repository vendor (/work/team/vendor) read-only: it lies inside /work/team") {
		t.Errorf("a read-only repository inside the project: %v", err)
	}
}
