package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
)

func TestConformance(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider { return file.New(t.TempDir()) })
}

func ref(path string) docprovider.Ref {
	return docprovider.Ref{Workflow: "review", Tag: "pr-7", Path: path}
}

// docsDir is where the user finds the documents of review:pr-7.
func docsDir(root string) string {
	return filepath.Join(root, ".workflow", "review", "pr-7", "documents")
}

// dirNames lists dir, hidden files included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// The user opens the documents with their own tools, so they must be plain
// files at the documented place, with no temporary files left behind.
func TestDocumentsAreRealFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := file.New(root)
	ctx := t.Context()
	if err := p.Write(ctx, ref("specs/api.md"), "# API\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ctx, ref("notes.md"), "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ctx, ref("notes.md"), "b"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"specs/api.md": "# API\n", "notes.md": "ab"} {
		full := filepath.Join(docsDir(root), path)
		got, err := os.ReadFile(full)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", full, got, err, want)
		}
		if fi, err := os.Lstat(full); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o444 != 0o444 {
			t.Errorf("%s: %v, %v; want a regular file everyone can read", full, fi.Mode(), err)
		}
	}
	if got := dirNames(t, docsDir(root)); !slices.Equal(got, []string{"notes.md", "specs"}) {
		t.Errorf("documents folder holds %v, want [notes.md specs]: temporary files left behind?", got)
	}
	// A mode the user chose survives an overwrite.
	full := filepath.Join(docsDir(root), "notes.md")
	if err := os.Chmod(full, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(ctx, ref("notes.md"), "c"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(full); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after overwrite = %v, %v; want 0600 kept", fi.Mode(), err)
	}
}

// Invariant 9: a symlink inside the documents folder cannot be used to read
// or change anything outside it.
// The same holds for a workflow's own documents folder (NewIn).
func TestSymlinksCannotEscape(t *testing.T) {
	t.Parallel()
	for name, layout := range map[string]func(root string) (*file.Provider, string){
		"tree": func(root string) (*file.Provider, string) { return file.New(root), docsDir(root) },
		"own dir": func(root string) (*file.Provider, string) {
			d := filepath.Join(root, "a", "b", "c", "my-docs")
			return file.NewIn(d), d
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, dir := layout(t.TempDir())
			symlinksCannotEscape(t, p, dir)
		})
	}
}

func symlinksCannotEscape(t *testing.T, p *file.Provider, dir string) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"notes.md": secret, "sub": outside, "rel.md": "../../../../../" + filepath.Base(outside) + "/secret.md"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	for _, path := range []string{"notes.md", "sub/secret.md", "sub/new.md", "rel.md"} {
		if got, err := p.Read(ctx, ref(path)); !errors.Is(err, sdk.ErrPermission) {
			t.Errorf("Read %s through a symlink = %q, %v; want a permission error", path, got, err)
		}
		for op, err := range map[string]error{
			"Write":  p.Write(ctx, ref(path), "pwned"),
			"Append": p.Append(ctx, ref(path), "pwned"),
			"Create": p.Create(ctx, ref(path), "pwned"),
		} {
			if !errors.Is(err, sdk.ErrPermission) {
				t.Errorf("%s %s through a symlink = %v; want a permission error", op, path, err)
			}
		}
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "secret" {
		t.Errorf("outside file = %q, %v; want it unchanged", got, err)
	}
	if got := dirNames(t, outside); !slices.Equal(got, []string{"secret.md"}) {
		t.Errorf("outside folder holds %v; want only secret.md", got)
	}
	infos, err := p.List(ctx, docprovider.Scope{Workflow: "review", Tag: "pr-7"})
	if err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want symlinks that leave the folder skipped", infos, err)
	}
}

// A symlink that stays inside the folder is the user's business and works.
func TestSymlinkInsideFolderReads(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := file.New(root)
	if err := p.Write(t.Context(), ref("specs/api.md"), "api"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("specs/api.md", filepath.Join(docsDir(root), "api.md")); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Read(t.Context(), ref("api.md")); err != nil || got != "api" {
		t.Errorf("Read through an inside symlink = %q, %v; want %q", got, err, "api")
	}
}

// Documents written by hand, or by an earlier daemon, are served as they are;
// files that cannot be documents are left out of the listing.
func TestExistingTreeIsRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := docsDir(root)
	files := map[string]string{
		"notes.md":             "by hand\n",
		"plans/q3/roadmap.md":  "roadmap",
		"data.json":            "{}",
		".DS_Store":            "junk",
		".notes.md.tmp-abc123": "half a write",
		"tool.exe":             "MZ",
		".git/HEAD.txt":        "ref",
		"a b.md":               "space",
	}
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := file.New(root)
	if got, err := p.Read(t.Context(), ref("plans/q3/roadmap.md")); err != nil || got != "roadmap" {
		t.Errorf("Read = %q, %v; want %q", got, err, "roadmap")
	}
	infos, err := p.List(t.Context(), docprovider.Scope{Workflow: "review", Tag: "pr-7"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		got = append(got, in.Path)
	}
	if want := []string{"data.json", "notes.md", "plans/q3/roadmap.md"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
}

// A workflow that names its documents folder finds its documents right
// there, with no .workflow tree, and names still cannot leave it.
func TestNewInKeepsDocumentsInDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "my-docs")
	p := file.NewIn(dir)
	ctx := t.Context()
	if err := p.Write(ctx, ref("notes.md"), "# Notes\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ctx, ref("specs/api.md"), "x"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(got) != "# Notes\n" {
		t.Errorf("my-docs/notes.md = %q, %v", got, err)
	}
	if got := dirNames(t, root); !slices.Equal(got, []string{"my-docs"}) {
		t.Errorf("the workflow folder holds %v; want only my-docs (no .workflow)", got)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"notes.md", "specs"}) {
		t.Errorf("my-docs holds %v", got)
	}
	for _, bad := range []string{"../escape.md", "/etc/passwd", "a/../../escape.md", "%2e%2e/escape.md"} {
		if err := p.Write(ctx, ref(bad), "x"); err == nil {
			t.Errorf("Write %q succeeded; want it refused", bad)
		}
	}
	if got := dirNames(t, root); !slices.Equal(got, []string{"my-docs"}) {
		t.Errorf("after path escapes the workflow folder holds %v", got)
	}
	infos, err := p.List(ctx, docprovider.Scope{Workflow: "review", Tag: "pr-7"})
	if err != nil || len(infos) != 2 {
		t.Errorf("List = %v, %v; want notes.md and specs/api.md", infos, err)
	}
}
