package direct

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/sandbox/sandboxtest"
)

// testWorkspace is a workspace with every tool in a fresh directory, and a
// directory outside it holding secret.txt.
func testWorkspace(t *testing.T) (w *workspace, outside string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := newWorkspace(root, toolSetNames, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	return w, outside
}

func callTool(t *testing.T, w *workspace, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	text, isErr, err := w.call(ctx, tool, args)
	if err != nil {
		t.Fatalf("%s(%v) ended the run: %v", tool, args, err)
	}
	return text, isErr
}

func TestWorkspacePathsStayInside(t *testing.T) {
	t.Parallel()
	w, outside := testWorkspace(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(w.root, "outdir")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(w.root, "leak.txt")))
	must(os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(w.root, "dangling.txt")))
	must(os.MkdirAll(filepath.Join(w.root, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(w.root, "sub", "ok.txt"), []byte("inside"), 0o644))
	must(os.Symlink(filepath.Join(w.root, "sub"), filepath.Join(w.root, "alias")))

	refused := map[string]map[string]any{
		"read ..":                   {"tool": "read_file", "path": "../" + filepath.Base(outside) + "/secret.txt"},
		"read sub/../..":            {"tool": "read_file", "path": "sub/../../x"},
		"read absolute outside":     {"tool": "read_file", "path": filepath.Join(outside, "secret.txt")},
		"read symlinked dir":        {"tool": "read_file", "path": "outdir/secret.txt"},
		"read symlinked file":       {"tool": "read_file", "path": "leak.txt"},
		"write ..":                  {"tool": "write_file", "path": "../escaped.txt", "content": "x"},
		"write absolute outside":    {"tool": "write_file", "path": filepath.Join(outside, "new.txt"), "content": "x"},
		"write into symlinked dir":  {"tool": "write_file", "path": "outdir/new.txt", "content": "x"},
		"write through dangling":    {"tool": "write_file", "path": "dangling.txt", "content": "x"},
		"write over symlinked file": {"tool": "write_file", "path": "leak.txt", "content": "x"},
		"edit symlinked file":       {"tool": "edit_file", "path": "leak.txt", "old_text": "secret", "new_text": "x"},
		"list symlinked dir":        {"tool": "list_files", "path": "outdir"},
		"list ..":                   {"tool": "list_files", "path": ".."},
		"search symlinked dir":      {"tool": "search_files", "pattern": "secret", "path": "outdir"},
		"search absolute outside":   {"tool": "search_files", "pattern": "secret", "path": outside},
	}
	for name, args := range refused {
		t.Run(name, func(t *testing.T) {
			tool := args["tool"].(string)
			text, isErr := callTool(t, w, tool, args)
			if !isErr || !strings.Contains(text, "outside your working directory") && !strings.Contains(text, "leads nowhere") {
				t.Errorf("%s = %q (error %v), want a refusal", tool, text, isErr)
			}
			if strings.Contains(text, "the secret") {
				t.Errorf("%s showed the file outside: %q", tool, text)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "the secret" {
		t.Errorf("secret.txt = %q, %v: a tool changed the file outside", b, err)
	}
	for _, f := range []string{"new.txt", "escaped.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s was created outside the working directory", f)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(w.root), "escaped.txt")); err == nil {
		t.Error("escaped.txt was created beside the working directory")
	}

	// What stays inside works, symlinks and absolute paths included.
	for _, p := range []string{"sub/ok.txt", "alias/ok.txt", filepath.Join(w.root, "sub", "ok.txt"), "./sub/../sub/ok.txt"} {
		if text, isErr := callTool(t, w, "read_file", map[string]any{"path": p}); isErr || text != "inside" {
			t.Errorf("read_file %s = %q (error %v), want its content", p, text, isErr)
		}
	}
	// The directory as the run request named it, through a symlink.
	link := filepath.Join(t.TempDir(), "project")
	must(os.Symlink(w.root, link))
	viaLink, err := newWorkspace(link, toolSetNames, nil)
	must(err)
	if text, isErr := callTool(t, viaLink, "read_file", map[string]any{"path": filepath.Join(link, "sub", "ok.txt")}); isErr || text != "inside" {
		t.Errorf("read_file through the linked project path = %q (error %v), want its content", text, isErr)
	}
	if text, isErr := callTool(t, w, "search_files", map[string]any{"pattern": "secret|inside"}); isErr || !strings.Contains(text, "sub/ok.txt:1: inside") || strings.Contains(text, "the secret") {
		t.Errorf("search_files = %q, want the file inside and nothing from outside", text)
	}
}

func TestWorkspaceWriteEditListRead(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	if text, isErr := callTool(t, w, "write_file", map[string]any{"path": "src/main.go", "content": "package main\n\nfunc main() {}\n"}); isErr || text != "wrote 29 bytes to src/main.go" {
		t.Fatalf("write_file = %q (error %v)", text, isErr)
	}
	if text, isErr := callTool(t, w, "edit_file", map[string]any{"path": "src/main.go", "old_text": "main", "new_text": "x"}); !isErr || !strings.Contains(text, "occurs 2 times") {
		t.Errorf("ambiguous edit_file = %q (error %v), want it refused naming the count", text, isErr)
	}
	if text, isErr := callTool(t, w, "edit_file", map[string]any{"path": "src/main.go", "old_text": "func main() {}", "new_text": "func main() { println(1) }"}); isErr || !strings.Contains(text, "replaced 1 occurrence") {
		t.Errorf("edit_file = %q (error %v)", text, isErr)
	}
	if b, err := os.ReadFile(filepath.Join(w.root, "src", "main.go")); err != nil || string(b) != "package main\n\nfunc main() { println(1) }\n" {
		t.Errorf("main.go = %q, %v after the edit", b, err)
	}
	if text, isErr := callTool(t, w, "list_files", map[string]any{"recursive": true}); isErr || text != "src/\nsrc/main.go (41 bytes)" {
		t.Errorf("list_files = %q (error %v)", text, isErr)
	}
	if text, isErr := callTool(t, w, "read_file", map[string]any{"path": "src/main.go", "offset": 3}); isErr || text != "func main() { println(1) }\n" {
		t.Errorf("read_file from line 3 = %q (error %v)", text, isErr)
	}
	if text, isErr := callTool(t, w, "read_file", map[string]any{"path": "src/main.go", "offset": 1, "limit": 1}); isErr || !strings.HasPrefix(text, "package main\n\n[cut: showing lines 1-1 of 3") || !strings.HasSuffix(text, "offset=2]") {
		t.Errorf("read_file of line 1 = %q (error %v)", text, isErr)
	}
	if text, isErr := callTool(t, w, "read_file", map[string]any{"path": "nope.txt"}); !isErr || !strings.Contains(text, "no such file") {
		t.Errorf("read_file of a missing file = %q (error %v)", text, isErr)
	}
}

func TestWorkspaceReadCutsLongFiles(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	var b strings.Builder
	for i := 1; i <= 10_000; i++ {
		fmt.Fprintf(&b, "line %05d\n", i)
	}
	if err := os.WriteFile(filepath.Join(w.root, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr := callTool(t, w, "read_file", map[string]any{"path": "big.txt"})
	if isErr || len(text) > maxToolOutput+200 {
		t.Fatalf("read_file of 110 kB gave %d bytes (error %v), want at most about %d", len(text), isErr, maxToolOutput)
	}
	note := text[strings.LastIndex(text, "[cut:"):]
	if !strings.Contains(note, "of 10000") || !strings.Contains(note, "110000 bytes") {
		t.Errorf("cut note = %q, want the file's full size", note)
	}
	next, err := strconv.Atoi(strings.TrimSuffix(note[strings.Index(note, "offset=")+len("offset="):], "]"))
	if err != nil {
		t.Fatalf("cut note %q has no offset to read on from", note)
	}
	more, isErr := callTool(t, w, "read_file", map[string]any{"path": "big.txt", "offset": next})
	if want := fmt.Sprintf("line %05d\n", next); isErr || !strings.HasPrefix(more, want) {
		t.Errorf("reading on from offset %d starts %q (error %v), want %q", next, more[:min(len(more), 20)], isErr, want)
	}
}

func TestShellRunsInTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	text, isErr := callTool(t, w, "run_shell", map[string]any{"command": "pwd; echo oops >&2; exit 3"})
	if !isErr || !strings.Contains(text, w.root+"\n") || !strings.Contains(text, "oops") || !strings.HasSuffix(text, "[exit status 3]") {
		t.Errorf("run_shell = %q (error %v), want the directory, stderr and the exit status", text, isErr)
	}
}

func TestShellOutputIsCut(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	text, isErr := callTool(t, w, "run_shell", map[string]any{"command": "echo first; yes 0123456789 | head -c 200000; echo; echo last"})
	if isErr || len(text) > maxToolOutput+300 {
		t.Fatalf("run_shell printed %d bytes to the model (error %v), want at most about %d", len(text), isErr, maxToolOutput)
	}
	if !strings.HasPrefix(text, "first\n") || !strings.Contains(text, "last\n[exit status 0]") || !strings.Contains(text, "[output cut: 200012 bytes in all") {
		t.Errorf("run_shell = %q…%q, want the start, the end and the full size", text[:100], text[len(text)-200:])
	}
}

func TestShellTimeoutKillsTheTree(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	text, isErr := callTool(t, w, "run_shell", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 300", "timeout_seconds": 1})
	if !isErr || !strings.HasPrefix(text, "started\n") || !strings.Contains(text, "[killed after 1s") {
		t.Fatalf("run_shell = %q (error %v), want its output and that it was killed", text, isErr)
	}
	b, err := os.ReadFile(filepath.Join(w.root, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("bg.pid = %q: %v", b, err)
	}
	testkit.WaitGone(t, pid) // the background sleep must not outlive the timed-out command
}

func TestToolSets(t *testing.T) {
	t.Parallel()
	names := func(w *workspace) []string {
		var out []string
		for _, tool := range w.tools() {
			out = append(out, tool.Name)
		}
		return out
	}
	for name, tc := range map[string]struct {
		tools   *[]string
		want    []string
		wantErr string
	}{
		"absent is all": {nil, []string{"read_file", "write_file", "edit_file", "list_files", "search_files", "run_shell"}, ""},
		"empty is none": {&[]string{}, nil, ""},
		"some":          {&[]string{"shell", "read", "read"}, []string{"run_shell", "read_file"}, ""},
		"unknown":       {&[]string{"read", "browse"}, nil, `unknown tool "browse": use some of read, write, list, search, shell`},
	} {
		t.Run(name, func(t *testing.T) {
			sets, err := parseToolSets(tc.tools)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if got := names(&workspace{sets: sets}); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
		})
	}
}

// reported collects what a workspace reports as sandbox events.
func reported(w *workspace) *[]string {
	var lines []string
	w.report = func(l string) error {
		lines = append(lines, l)
		return nil
	}
	return &lines
}

// run_shell has the run's tool network, not the plugin's: none unless the
// policy grants ports to tools. A refused port is a line after the output
// for the model and a sandbox event. Only the command is confined
// (sandbox.RunTool), so this runs in the test process.
func TestShellToolNetwork(t *testing.T) {
	t.Parallel()
	sandboxtest.NeedLandlock(t)
	port := sandboxtest.Listen(t)
	command := sandboxtest.ConnectLine(t, port)
	for name, tc := range map[string]struct {
		toolNet sandbox.Net
		refused bool
	}{
		"none by default":         {sandbox.Net{}, true},
		"a port granted to tools": {sandbox.Net{Ports: []uint16{port}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, _ := testWorkspace(t)
			w.policy = sandboxtest.Policy(w.root, port)
			w.policy.ToolNet = tc.toolNet
			lines := reported(w)
			text, isErr := callTool(t, w, "run_shell", map[string]any{"command": command})
			if !tc.refused {
				if isErr || text != "connected\n[exit status 0]" || len(*lines) != 0 {
					t.Errorf("run_shell = %q (error %v), sandbox events %q; want it connected and nothing refused", text, isErr, *lines)
				}
				return
			}
			what := fmt.Sprintf("TCP port %d is outside the agent's sandbox", port)
			if len(*lines) != 1 || !strings.HasPrefix((*lines)[0], what) {
				t.Fatalf("sandbox events = %q, want one naming port %d", *lines, port)
			}
			if want := "[exit status 1]\nsandbox: " + (*lines)[0]; !isErr || !strings.Contains(text, "Permission denied") || !strings.HasSuffix(text, want) {
				t.Errorf("run_shell = %q (error %v), want the refusal, the exit status and then %q", text, isErr, want)
			}
		})
	}
}

// Without a sandbox nothing is explained: a refusal is not the sandbox's.
func TestShellUnconfinedExplainsNothing(t *testing.T) {
	t.Parallel()
	w, _ := testWorkspace(t)
	lines := reported(w)
	text, _ := callTool(t, w, "run_shell", map[string]any{"command": "echo 'cat: /root/secret: Permission denied' >&2; exit 1"})
	if strings.Contains(text, "sandbox:") || len(*lines) != 0 {
		t.Errorf("run_shell = %q, sandbox events %q; want no sandbox lines", text, *lines)
	}
}

// A file tool's permission error is the sandbox's only on a path the policy
// leaves out (or leaves read-only, for a tool that writes).
func TestFileRefusal(t *testing.T) {
	t.Parallel()
	w, outside := testWorkspace(t)
	link := filepath.Join(t.TempDir(), "project")
	if err := os.Symlink(w.root, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := newWorkspace(link, toolSetNames, nil)
	if err != nil {
		t.Fatal(err)
	}
	denied := func(path string) error {
		return fmt.Errorf("read x: %w", &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES})
	}
	inside, secret := filepath.Join(w.root, "x.txt"), filepath.Join(outside, "secret.txt")
	readOnly := sandbox.Policy{Read: []string{w.root, outside}}
	// A repository named through a symlink: the policy grants it as named.
	repo := t.TempDir()
	repoLink := filepath.Join(t.TempDir(), "lib")
	if err := os.Symlink(repo, repoLink); err != nil {
		t.Fatal(err)
	}
	withRepo := *w
	withRepo.repos = []backend.Repo{{Name: "lib", Path: repoLink, Write: true}}
	inRepo, err := withRepo.in("lib")
	if err != nil {
		t.Fatal(err)
	}
	inRepoFile := filepath.Join(mustEval(t, repo), "lib.go")
	for name, tc := range map[string]struct {
		w      *workspace
		policy sandbox.Policy
		tool   string
		err    error
		want   string
	}{
		"not readable":           {w, sandbox.Policy{Write: []string{"/nowhere"}}, "read_file", denied(secret), secret + " is outside the agent's sandbox (not readable)"},
		"read-only":              {w, readOnly, "write_file", denied(inside), inside + " is outside the agent's sandbox (read-only)"},
		"read-only, edited":      {w, readOnly, "edit_file", denied(inside), inside + " is outside the agent's sandbox (read-only)"},
		"read-only, read":        {w, readOnly, "read_file", denied(inside), ""},
		"granted as linked":      {viaLink, sandbox.Policy{Write: []string{link}}, "write_file", denied(inside), ""},
		"inside the sandbox":     {w, sandbox.Policy{Write: []string{w.root}}, "write_file", denied(inside), ""},
		"not a permission error": {w, readOnly, "write_file", &fs.PathError{Op: "open", Path: inside, Err: syscall.ENOSPC}, ""},
		"no sandbox":             {w, sandbox.Policy{}, "read_file", denied(secret), ""},
		"repo read-only":         {inRepo, sandbox.Policy{Read: []string{repoLink}}, "write_file", denied("lib.go"), inRepoFile + " is outside the agent's sandbox (read-only)"},
		"repo granted as linked": {inRepo, sandbox.Policy{Write: []string{repoLink}}, "edit_file", denied(inRepoFile), ""},
		"repo not readable":      {inRepo, sandbox.Policy{Write: []string{w.root}}, "read_file", denied(inRepoFile), inRepoFile + " is outside the agent's sandbox (not readable)"},
	} {
		t.Run(name, func(t *testing.T) {
			ws := *tc.w
			ws.policy = tc.policy
			if got := ws.fileRefusal(tc.tool, tc.err); got != tc.want {
				t.Errorf("fileRefusal = %q, want %q", got, tc.want)
			}
		})
	}
}

// ConfinedEnv makes the test binary a confined workspace, in a process of
// its own: see runConfined. TestMain (direct_test.go) calls
// ConfinedWorkspace.
const ConfinedEnv = "DIRECT_TEST_CONFINED_WORKSPACE"

// confinedCall is one workspace tool call for runConfined to make.
type confinedCall struct {
	Root string
	Tool string
	Args map[string]any
}

// confinedResult is what a confined call answered and reported.
type confinedResult struct {
	Text    string
	IsError bool
	Events  []string
}

// runConfined makes calls in a process of its own, this test binary
// confined to policy as the sdk confines a warm spare before its run: a
// Landlock layer cannot be lifted, so the test process itself is never
// confined. Every call's workspace has repos.
func runConfined(t *testing.T, policy sandbox.Policy, repos []backend.Repo, calls map[string]confinedCall) map[string]confinedResult {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(struct {
		Policy sandbox.Policy
		Repos  []backend.Repo
		Calls  map[string]confinedCall
	}{policy, repos, calls})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), ConfinedEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the confined workspace: %v\n%s", err, stderr.String())
	}
	var results map[string]confinedResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("the confined workspace's results: %v\n%s", err, out)
	}
	return results
}

// ConfinedWorkspace is the process of runConfined: it confines itself
// to the policy raw holds, makes the calls, each in a workspace of its
// root, and prints what they answered and reported as JSON.
func ConfinedWorkspace(raw string) int {
	var in struct {
		Policy sandbox.Policy
		Repos  []backend.Repo
		Calls  map[string]confinedCall
	}
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := sandbox.Restrict(in.Policy); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out := map[string]confinedResult{}
	for name, c := range in.Calls {
		w, err := newWorkspace(c.Root, toolSetNames, os.Environ())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		w.policy, w.repos = in.Policy, in.Repos
		lines := reported(w)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		text, isErr, err := w.call(ctx, c.Tool, c.Args)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 1
		}
		out[name] = confinedResult{Text: text, IsError: isErr, Events: *lines}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// In a confined plugin the workspace tools work where the policy lets
// them, and where it does not the model reads a line naming the path or
// port the sandbox refused, which also goes out as a sandbox event.
func TestWorkspaceInTheSandbox(t *testing.T) {
	t.Parallel()
	sandboxtest.NeedLandlock(t)
	port := sandboxtest.Listen(t)
	project, readOnly, outside := t.TempDir(), t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	for path, content := range map[string]string{secret: "the secret", filepath.Join(readOnly, "notes.txt"): "read me"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policy := sandboxtest.Policy(project, port)
	policy.Read = append(policy.Read, readOnly)
	type want struct {
		isErr  bool
		text   string // in the result
		refuse string // what a sandbox line names; "" for none
		how    string // (not readable), (read-only), (network: none)
	}
	cases := map[string]struct {
		call confinedCall
		want want
	}{
		"shell writes in the project": {confinedCall{project, "run_shell", map[string]any{"command": "echo hi > hi.txt && cat hi.txt"}},
			want{false, "hi\n[exit status 0]", "", ""}},
		"shell reads outside": {confinedCall{project, "run_shell", map[string]any{"command": "cat " + secret}},
			want{true, "Permission denied", secret, "(not readable)"}},
		"shell connects to the plugin's port": {confinedCall{project, "run_shell", map[string]any{"command": sandboxtest.ConnectLine(t, port)}},
			want{true, "Permission denied", fmt.Sprintf("TCP port %d", port), "(network: none)"}},
		"read in a read-only directory": {confinedCall{readOnly, "read_file", map[string]any{"path": "notes.txt"}},
			want{false, "read me", "", ""}},
		"write in a read-only directory": {confinedCall{readOnly, "write_file", map[string]any{"path": "new.txt", "content": "x"}},
			want{true, "permission denied", filepath.Join(readOnly, "new.txt"), "(read-only)"}},
		"edit in a read-only directory": {confinedCall{readOnly, "edit_file", map[string]any{"path": "notes.txt", "old_text": "read", "new_text": "edit"}},
			want{true, "permission denied", filepath.Join(readOnly, "notes.txt"), "(read-only)"}},
		"shell writes in a read-only repository": {confinedCall{project, "run_shell", map[string]any{"repo": "docs", "command": "touch ./new.txt"}},
			want{true, "Permission denied", filepath.Join(readOnly, "new.txt"), "(read-only)"}},
		"read in a read-only repository": {confinedCall{project, "read_file", map[string]any{"repo": "docs", "path": "notes.txt"}},
			want{false, "read me", "", ""}},
		"read outside": {confinedCall{outside, "read_file", map[string]any{"path": "secret.txt"}},
			want{true, "permission denied", secret, "(not readable)"}},
		"list outside": {confinedCall{outside, "list_files", map[string]any{}},
			want{true, "permission denied", outside, "(not readable)"}},
		"search outside": {confinedCall{outside, "search_files", map[string]any{"pattern": "secret"}},
			want{true, "permission denied", outside, "(not readable)"}},
	}
	calls := map[string]confinedCall{}
	for name, c := range cases {
		calls[name] = c.call
	}
	// The read-only directory is also a repository the workspace gives
	// read-only and that the policy grants read-only: the shell runs
	// there, and what the sandbox refused it is named in it.
	results := runConfined(t, policy, []backend.Repo{{Name: "docs", Path: readOnly}}, calls)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, w := results[name], c.want
			if got.IsError != w.isErr || !strings.Contains(got.Text, w.text) || strings.Contains(got.Text, "the secret") {
				t.Errorf("%s = %q (error %v), want %q in it (error %v)", c.call.Tool, got.Text, got.IsError, w.text, w.isErr)
			}
			if w.refuse == "" {
				if len(got.Events) != 0 || strings.Contains(got.Text, "sandbox:") {
					t.Errorf("%s = %q, sandbox events %q; want nothing refused", c.call.Tool, got.Text, got.Events)
				}
				return
			}
			if len(got.Events) != 1 || !strings.HasPrefix(got.Events[0], w.refuse+" is outside the agent's sandbox "+w.how) {
				t.Fatalf("sandbox events = %q, want one saying %s is outside the sandbox %s", got.Events, w.refuse, w.how)
			}
			if line := "\nsandbox: " + got.Events[0]; !strings.HasSuffix(got.Text, line) {
				t.Errorf("%s = %q, want it to end with %q", c.call.Tool, got.Text, line)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(readOnly, "notes.txt")); err != nil || string(b) != "read me" {
		t.Errorf("notes.txt in the read-only directory = %q, %v: a tool changed it", b, err)
	}
}

// repoWorkspace is testWorkspace with two repositories beside the working
// directory: lib, read-only, named through a symlink and holding
// lib.go, and app, writable and empty.
func repoWorkspace(t *testing.T) (w *workspace, lib, app, outside string) {
	t.Helper()
	w, outside = testWorkspace(t)
	lib, app = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "lib.go"), []byte("package lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	libLink := filepath.Join(t.TempDir(), "lib")
	if err := os.Symlink(lib, libLink); err != nil {
		t.Fatal(err)
	}
	w.repos = []backend.Repo{{Name: "lib", Path: libLink}, {Name: "app", Path: app, Write: true}}
	return w, libLink, app, outside
}

// A call naming a repository works in it: paths resolve inside its
// directory by the working directory's rules, the shell starts there, and
// a read-only one refuses the tools that write.
func TestWorkspaceRepos(t *testing.T) {
	t.Parallel()
	w, lib, app, outside := repoWorkspace(t)
	ok := map[string]struct {
		args map[string]any
		want string
	}{
		"read in a repo":            {map[string]any{"tool": "read_file", "repo": "lib", "path": "lib.go"}, "package lib\n"},
		"read absolute in a repo":   {map[string]any{"tool": "read_file", "repo": "lib", "path": filepath.Join(lib, "lib.go")}, "package lib\n"},
		"list a repo":               {map[string]any{"tool": "list_files", "repo": "lib"}, "lib.go (12 bytes)"},
		"search a repo":             {map[string]any{"tool": "search_files", "repo": "lib", "pattern": "package"}, "lib.go:1: package lib\n"},
		"shell starts in the repo":  {map[string]any{"tool": "run_shell", "repo": "app", "command": "pwd -P"}, mustEval(t, app) + "\n[exit status 0]"},
		"shell in a read-only repo": {map[string]any{"tool": "run_shell", "repo": "lib", "command": "cat lib.go"}, "package lib\n[exit status 0]"},
		"write in a writable repo":  {map[string]any{"tool": "write_file", "repo": "app", "path": "cmd/main.go", "content": "package main\n"}, "wrote 13 bytes to cmd/main.go"},
		"no repo: the working dir":  {map[string]any{"tool": "list_files"}, "is empty"},
	}
	for name, tc := range ok {
		t.Run(name, func(t *testing.T) {
			text, isErr := callTool(t, w, tc.args["tool"].(string), tc.args)
			if isErr || !strings.Contains(text, tc.want) {
				t.Errorf("%v = %q (error %v), want %q", tc.args, text, isErr, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(app, "cmd", "main.go")); err != nil || string(b) != "package main\n" {
		t.Errorf("app/cmd/main.go = %q, %v; want what write_file wrote in the repository", b, err)
	}

	refused := map[string]struct {
		args map[string]any
		want string
	}{
		"unknown repo":            {map[string]any{"tool": "read_file", "repo": "x", "path": "a"}, `repo "x" is not in this workspace: use one of lib, app`},
		"repo not a string":       {map[string]any{"tool": "read_file", "repo": 3, "path": "a"}, "repo must be a string"},
		"write a read-only repo":  {map[string]any{"tool": "write_file", "repo": "lib", "path": "new.go", "content": "x"}, "repository lib is read-only in this workspace"},
		"edit a read-only repo":   {map[string]any{"tool": "edit_file", "repo": "lib", "path": "lib.go", "old_text": "lib", "new_text": "x"}, "repository lib is read-only in this workspace"},
		".. out of a repo":        {map[string]any{"tool": "read_file", "repo": "app", "path": "../" + filepath.Base(outside) + "/secret.txt"}, "outside repository app: use a path inside it"},
		"another repo's path":     {map[string]any{"tool": "read_file", "repo": "app", "path": filepath.Join(lib, "lib.go")}, "outside repository app: it is in repository lib"},
		"a repo without repo":     {map[string]any{"tool": "read_file", "path": filepath.Join(lib, "lib.go")}, `outside your working directory: it is in repository lib: pass repo: "lib"`},
		"shell in an unknown one": {map[string]any{"tool": "run_shell", "repo": "x", "command": "touch ran"}, `repo "x" is not in this workspace`},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			text, isErr := callTool(t, w, tc.args["tool"].(string), tc.args)
			if !isErr || !strings.Contains(text, tc.want) {
				t.Errorf("%v = %q (error %v), want an error with %q", tc.args, text, isErr, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(lib, "lib.go")); err != nil || string(b) != "package lib\n" {
		t.Errorf("lib/lib.go = %q, %v: a tool changed the read-only repository", b, err)
	}
	for _, p := range []string{filepath.Join(lib, "new.go"), filepath.Join(w.root, "ran")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: a refused call ran", p)
		}
	}

	// A run without repositories refuses any repo, saying it has none.
	plain, _ := testWorkspace(t)
	if text, isErr := callTool(t, plain, "list_files", map[string]any{"repo": "lib"}); !isErr || !strings.Contains(text, "has no repositories: leave repo out") {
		t.Errorf("list_files in a run without repositories = %q (error %v), want it refused", text, isErr)
	}
}

// mustEval is path with its symlinks resolved, as the tools name it.
func mustEval(t *testing.T, path string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// The repo argument is offered only to a run that has repositories, so the
// tools (and the prompt) of one without stay as they were.
func TestWorkspaceToolsOfferRepoOnlyWithRepos(t *testing.T) {
	t.Parallel()
	w, _, _, _ := repoWorkspace(t)
	plain, _ := testWorkspace(t)
	for _, tc := range []struct {
		w    *workspace
		want bool
	}{{w, true}, {plain, false}} {
		for _, tool := range tc.w.tools() {
			props := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
			repo, has := props["repo"]
			if has != tc.want {
				t.Errorf("%s offers repo: %v, want %v", tool.Name, has, tc.want)
			}
			if has && !strings.Contains(fmt.Sprint(repo), "one of lib, app") {
				t.Errorf("%s's repo argument = %v, want it to name the repositories", tool.Name, repo)
			}
		}
	}
}
