package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// inTwoFolders installs body as the backend plugin x in two plugin
// folders under dir, first and second, and returns the two paths.
func inTwoFolders(t *testing.T, dir string, body []byte) []string {
	t.Helper()
	var bins []string
	for _, folder := range []string{"first", "second"} {
		bin := filepath.Join(dir, folder, "agent-worker-backend-x")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, body, 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, bin)
	}
	return bins
}

// The same plugin in two folders is examined at once at start-up: the
// second examination must not rewrite the copy the first one published,
// or the first entry's next start refuses it as changed (issue 27, item
// 8). A daemon started again keeps the copy an earlier one made.
func TestSamePluginInTwoFoldersSharesOneCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copies := filepath.Join(dir, "verified")
	bins := inTwoFolders(t, dir, []byte("#!/bin/sh\nexit 0\n"))
	c := NewCatalog(nil, copies, dir, 0, hclog.NewNullLogger())
	// Both copies are published before either entry is stored, as two
	// concurrent examinations do.
	type copied struct {
		sum, exe string
		stamp    fileStamp
	}
	var got []copied
	for _, bin := range bins {
		sum, exe, stamp, release, err := c.verifyCopy(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		got = append(got, copied{sum, exe, stamp})
	}
	if got[0] != got[1] {
		t.Fatalf("the second folder's copy replaced the first's: %+v, then %+v", got[0], got[1])
	}
	for _, bin := range bins {
		c.byPath[bin] = entry{Plugin: api.Plugin{Kind: "backend", Name: "x", Path: bin, SHA256: got[0].sum, ExecPath: got[0].exe}, copyStamp: got[0].stamp}
	}
	for _, bin := range bins {
		if exe, err := c.Verified(c.byPath[bin].Plugin); err != nil || exe != got[0].exe {
			t.Errorf("start of %s: %q, %v; want its verified copy", bin, exe, err)
		}
	}

	restarted := NewCatalog(nil, copies, dir, 0, hclog.NewNullLogger())
	_, _, stamp, release, err := restarted.verifyCopy(bins[1])
	if err != nil {
		t.Fatal(err)
	}
	release()
	if stamp != got[0].stamp {
		t.Errorf("a daemon started again rewrote the sound copy: stamp %+v, then %+v", got[0].stamp, stamp)
	}
}

// The same bytes under the same name in a second folder get the first
// folder's verdict without being started again.
func TestSamePluginInTwoFoldersStartsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	bins := inTwoFolders(t, dir, []byte("#!/bin/sh\necho started >> "+starts+"\nexit 3\n"))
	c := NewCatalog(nil, filepath.Join(dir, "verified"), testkit.ShortTempDir(t), 0, hclog.NewNullLogger())
	for _, bin := range bins {
		c.examine(t.Context(), bin)
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Errorf("the binary was started %d times for its verdict, want once", n)
	}
	first, second := c.byPath[bins[0]], c.byPath[bins[1]]
	if first.Error == "" || second.Error != first.Error || second.SHA256 != first.SHA256 {
		t.Errorf("verdicts: %q and %q, want the same failure", first.Error, second.Error)
	}
}
