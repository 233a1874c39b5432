package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// A verified copy holds exactly the bytes hashed, under their sha256, mode
// 0500; examining the same bytes again keeps a sound copy (a running
// process may execute it) and replaces an altered one.
func TestVerifyCopyKeepsASoundCopyAndReplacesAnAlteredOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := NewCatalog(nil, filepath.Join(dir, "verified"), dir, 0, hclog.NewNullLogger())
	bin := filepath.Join(dir, "agent-worker-backend-x")
	body := []byte("#!/bin/sh\nexit 0\n")
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(body)
	sum, exe, stamp, release, err := c.verifyCopy(bin)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if sum != hex.EncodeToString(want[:]) || exe != filepath.Join(dir, "verified", sum) {
		t.Fatalf("verifyCopy = %s, %s", sum, exe)
	}
	if b, err := os.ReadFile(exe); err != nil || string(b) != string(body) {
		t.Errorf("copy holds %q, %v", b, err)
	}
	if st, err := os.Stat(exe); err != nil {
		t.Errorf("the copy: %v", err)
	} else if st.Mode().Perm() != 0o500 {
		t.Errorf("copy mode %v, want 0500", st.Mode().Perm())
	}
	// The catalog stores the entry that runs the copy.
	c.byPath[bin] = entry{Plugin: api.Plugin{Path: bin, SHA256: sum, ExecPath: exe}, copyStamp: stamp}

	_, _, again, release, err := c.verifyCopy(bin)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if again != stamp {
		t.Errorf("a sound copy was replaced: stamp %+v, then %+v", stamp, again)
	}

	if err := os.Chmod(exe, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exe, 0o500); err != nil {
		t.Fatal(err)
	}
	_, _, fixed, release, err := c.verifyCopy(bin)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if b, err := os.ReadFile(exe); err != nil || string(b) != string(body) || fixed == stamp {
		t.Errorf("altered copy kept: %q, %v", b, err)
	}
}

// gc removes copies no entry refers to and old temporary files; it keeps
// referenced copies, copies being made, a temporary file being written
// and anything that is not its own.
func TestVerifiedCopiesGC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copies := filepath.Join(dir, "verified")
	c := NewCatalog(nil, copies, dir, 0, hclog.NewNullLogger())
	if err := os.MkdirAll(copies, 0o700); err != nil {
		t.Fatal(err)
	}
	name := func(b byte) string { s := sha256.Sum256([]byte{b}); return hex.EncodeToString(s[:]) }
	files := map[string]bool{ // name: kept
		name(1):                 true, // an entry refers to it
		name(2):                 true, // being made
		name(3):                 false,
		tmpPrefix + "new":       true,
		tmpPrefix + "crashed":   false,
		"README":                true,
		name(4)[:63]:            true, // not a sha256
		"ABCDEF" + name(5)[6:]:  true, // not our spelling
		name(6) + ".evil":       true,
		name(7) + "/" + name(8): true, // not at the top
	}
	for f := range files {
		p := filepath.Join(copies, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTmpAge)
	if err := os.Chtimes(filepath.Join(copies, tmpPrefix+"crashed"), old, old); err != nil {
		t.Fatal(err)
	}
	c.byPath["/p/agent-worker-backend-x"] = entry{Plugin: api.Plugin{ExecPath: filepath.Join(copies, name(1))}}
	c.making[name(2)] = 1
	c.gc()
	for f, kept := range files {
		if _, err := os.Stat(filepath.Join(copies, f)); (err == nil) != kept {
			t.Errorf("%s: stat %v, want kept %v", f, err, kept)
		}
	}
}
