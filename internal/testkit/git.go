package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NeedGit skips a test on a machine without git, saying so.
func NeedGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("these tests run the real git, which is not installed: %v", err)
	}
}

// Git runs git in dir for the test, as a user would, and returns its
// output; a failure fails t.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo makes a repository on branch main with one commit of README
// and an identity for the commits made in it.
func NewRepo(t testing.TB) string {
	t.Helper()
	NeedGit(t)
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "config", "user.name", "Test")
	Git(t, dir, "config", "user.email", "test@example.com")
	WriteFile(t, filepath.Join(dir, "README"), "hello\n")
	Git(t, dir, "add", "README")
	Git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// WriteFile writes content to path, making its directory.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Commit writes files in dir and commits them.
func Commit(t testing.TB, dir, msg string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		WriteFile(t, filepath.Join(dir, name), content)
		Git(t, dir, "add", name)
	}
	Git(t, dir, "commit", "-q", "-m", msg)
}
