package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

// A merge queue check may write its scratch worktree, its temporary
// directory and the worktree's own git admin directory, read the rest of
// the repository's git directory, and reach no network; unconfined when
// runs are.
func TestCheckPolicy(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	common := filepath.Join(repo, ".git")
	admin := filepath.Join(common, "worktrees", "scratch")
	dir := filepath.Join(t.TempDir(), "scratch")
	for _, d := range []string{admin, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin, "commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ok := New(Auto, landlock7, "/h").Check(dir, "/tmp/aw-check-1")
	if !ok {
		t.Fatal("a check is not confined where runs are")
	}
	for _, w := range []string{dir, "/tmp/aw-check-1", admin, "/dev/null"} {
		if !slices.Contains(p.Write, w) {
			t.Errorf("a check may not write %s: %+v", w, p.Write)
		}
	}
	for _, w := range []string{filepath.Join(common, "refs"), filepath.Join(common, "objects"), "/h"} {
		if slices.Contains(p.Write, w) {
			t.Errorf("a check may write %s", w)
		}
	}
	if !slices.Contains(p.Read, common) || !slices.Contains(p.Read, "/usr") {
		t.Errorf("a check may not read the repository's git directory or /usr: %+v", p.Read)
	}
	if p.Net.All || len(p.Net.Ports) > 0 || p.ToolNet.All || len(p.ToolNet.Ports) > 0 {
		t.Errorf("a check reaches the network: %+v", p.Net)
	}
	if _, ok := New(Off, landlock7, "/h").Check(dir, "/tmp/x"); ok {
		t.Error("--sandbox off confines checks")
	}
	if _, ok := New(Auto, sb.Status{Why: "no landlock"}, "/h").Check(dir, "/tmp/x"); ok {
		t.Error("a kernel without Landlock confines checks")
	}
}
