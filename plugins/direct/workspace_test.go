package direct

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "the secret" {
		t.Errorf("secret.txt = %q: a tool changed the file outside", b)
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
	if b, _ := os.ReadFile(filepath.Join(w.root, "src", "main.go")); string(b) != "package main\n\nfunc main() { println(1) }\n" {
		t.Errorf("main.go = %q after the edit", b)
	}
	if text, _ := callTool(t, w, "list_files", map[string]any{"recursive": true}); text != "src/\nsrc/main.go (41 bytes)" {
		t.Errorf("list_files = %q", text)
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
	more, _ := callTool(t, w, "read_file", map[string]any{"path": "big.txt", "offset": next})
	if want := fmt.Sprintf("line %05d\n", next); !strings.HasPrefix(more, want) {
		t.Errorf("reading on from offset %d starts %q, want %q", next, more[:min(len(more), 20)], want)
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
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep (pid %s) outlived the timed-out command", pid)
		}
		time.Sleep(20 * time.Millisecond) // waiting on another process's exit
	}
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
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
