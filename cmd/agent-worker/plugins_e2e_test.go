package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unusable files in plugins.d are visible and never stall the CLI: a
// script that never completes the handshake and a file that is not
// executable are listed by `plugins` and `status` with the reason, and
// `new --backend` says what to do instead of "unknown backend".
func TestE2EBrokenPluginsListed(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := filepath.Join(c.home, "plugins.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleepy := filepath.Join(dir, "agent-worker-backend-sleepy")
	if err := os.WriteFile(sleepy, []byte("#!/bin/sh\nsleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "agent-worker-backend-x")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.startDaemon()

	chmod := "installed but not executable: chmod +x " + notExec
	for range 2 { // the second answers from what the first found
		out := c.ok("plugins", "--wide") // the reasons whole, on one line
		for _, want := range []string{"sleepy", "error: no plugin handshake within 5s", chmod, "mock"} {
			if !strings.Contains(out, want) {
				t.Errorf("plugins lacks %q:\n%s", want, out)
			}
		}
	}
	if out := c.ok("status"); !strings.Contains(out, "backend plugin sleepy") || !strings.Contains(out, chmod) {
		t.Errorf("status lacks the broken plugins:\n%s", out)
	}
	if r := c.run("new", "a", "--backend", "x"); r.code == 0 || !strings.Contains(r.stderr, chmod) {
		t.Errorf("new --backend x: exit %d, stderr %q, want %q", r.code, r.stderr, chmod)
	}
}
