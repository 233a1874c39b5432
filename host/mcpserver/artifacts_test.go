package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// task_complete's artifacts must be files in the agent's working
// directory: a missing one, one that leaves it (.., an absolute path, a
// link out of it) is refused with what to do; good ones come back clean.
func TestCheckArtifacts(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{"docs/report.md", "out.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s := New(nil, nil, nil, hclog.NewNullLogger())
	s.ProjectDir = func(context.Context, store.AgentKey) (string, error) { return dir, nil }
	me := store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
	for name, tc := range map[string]struct {
		paths []string
		want  string // the error, or the cleaned paths joined by ","
	}{
		"good":      {[]string{"docs/report.md", "./out.txt", "docs/report.md"}, "docs/report.md,out.txt"},
		"none":      {nil, ""},
		"missing":   {[]string{"docs/report.md", "nope.md"}, "artifacts: nope.md is not in your working directory"},
		"traversal": {[]string{"../x"}, "artifacts: ../x leaves your working directory"},
		"absolute":  {[]string{filepath.Join(outside, "secret")}, "is absolute: give it relative to your working directory"},
		"link out":  {[]string{"link"}, "artifacts: link is not in your working directory " + dir + " (or leave it through a link)"},
	} {
		got, err := s.checkArtifacts(t.Context(), me, tc.paths)
		switch {
		case err != nil && (!strings.Contains(err.Error(), tc.want) || api.ErrorCode(err) != api.CodeInvalid):
			t.Errorf("%s: error %v (code %s), want %q (invalid)", name, err, api.ErrorCode(err), tc.want)
		case err == nil && strings.Join(got, ",") != tc.want:
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
