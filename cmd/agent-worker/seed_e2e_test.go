package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// copySeed copies a file of workflow/testdata/seed into a temp dir, byte
// for byte, so its documents land there and not in the checkout.
func copySeed(t *testing.T, name string) (dir, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "workflow", "testdata", "seed", name))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	path = filepath.Join(dir, name)
	writeFile(t, path, string(b))
	return dir, path
}

// The seed-format example (context: {provider: file, documentOwner: x})
// runs unchanged on mock backends until its team is idle.
func TestE2ESeedExampleRuns(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	_, path := copySeed(t, "review.yml")
	r := c.run("run", path, "--timeout", "60s")
	if r.code != 0 {
		t.Fatalf("run review.yml: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"@reviewer please review these changes", "greet.go | 3 ++-", "[reviewer] [reviewer] Processed:", "run(s), 0 failed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// context.documents.dir: an agent's team_doc_write (MCP) and the user's
// `doc write` both land in my-docs/ beside the workflow file.
func TestE2EDocumentsDir(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir, path := copySeed(t, "docs-dir.yml")
	if r := c.run("run", path, "--timeout", "60s"); r.code != 0 {
		t.Fatalf("run docs-dir.yml: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	docs := filepath.Join(dir, "my-docs")
	if b, err := os.ReadFile(filepath.Join(docs, "notes.md")); err != nil || !strings.Contains(string(b), "written through MCP") {
		t.Errorf("my-docs/notes.md = %q, %v", b, err)
	}
	c.ok("start", path, "--background")
	c.ok("doc", "write", "@docs-dir", "--file", "cli.md", "from the CLI")
	if b, err := os.ReadFile(filepath.Join(docs, "cli.md")); err != nil || string(b) != "from the CLI" {
		t.Errorf("my-docs/cli.md = %q, %v", b, err)
	}
	if out := c.ok("doc", "read", "@docs-dir", "--file", "notes.md"); !strings.Contains(out, "written through MCP") {
		t.Errorf("doc read notes.md = %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".workflow")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".workflow/ beside the file: %v; want the documents only in my-docs", err)
	}
	c.ok("stop", "@docs-dir")
}

// Over-large files and over-long names get an error that names the file or
// the length and the limit, before anything is read whole or sent.
func TestE2ELimitsAndLongNames(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	prompt := filepath.Join(dir, "prompt.md")
	writeFile(t, prompt, strings.Repeat("p", api.MaxSystemPromptBytes+1))
	big := filepath.Join(dir, "big.yaml")
	writeFile(t, big, "agents: {a: {backend: mock}}\n#"+strings.Repeat("x", api.MaxWorkflowFileBytes))
	long := strings.Repeat("a", 10000)
	for name, tc := range map[string]struct {
		args []string
		says []string
	}{
		"system file": {[]string{"new", "alice", "--backend", "mock", "--system-file", prompt}, []string{"system prompt file " + prompt + " is 1048577 bytes; the limit is 1 MiB"}},
		"workflow":    {[]string{"run", big}, []string{"workflow file " + big, "the limit is 1 MiB"}},
		"agent name":  {[]string{"new", long, "--backend", "mock"}, []string{`agent name "aaaa`, "is 10000 characters; at most 64"}},
		"tag name":    {[]string{"new", "alice", "--backend", "mock", "--tag", long}, []string{`tag name "aaaa`, "is 10000 characters; at most 64"}},
	} {
		r := c.run(tc.args...)
		if r.code != api.ExitUsage || len(r.stderr) > 500 {
			t.Errorf("%s: exit %d, stderr (%d bytes) %.500q; want exit %d and a short message", name, r.code, len(r.stderr), r.stderr, api.ExitUsage)
		}
		for _, want := range tc.says {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr %.500q lacks %q", name, r.stderr, want)
			}
		}
	}
}
