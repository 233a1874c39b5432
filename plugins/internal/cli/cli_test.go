package cli

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

func TestRunStreamsLinesAndStderr(t *testing.T) {
	t.Parallel()
	var out, errs []string
	err := Run(context.Background(), Command{Path: "/bin/sh", Args: []string{"-c", `echo '{"a":1}'; echo oops >&2; echo; echo two`},
		Stdout: func(l []byte) error { out = append(out, string(l)); return nil },
		Stderr: func(l string) { errs = append(errs, l) }})
	if err != nil || strings.Join(out, ",") != `{"a":1},two` || strings.Join(errs, ",") != "oops" {
		t.Errorf("err %v, stdout %q, stderr %q", err, out, errs)
	}
}

func TestRunExitErrorKeepsStderr(t *testing.T) {
	t.Parallel()
	err := Run(context.Background(), Command{Path: "/bin/sh", Args: []string{"-c", "echo 'bad key' >&2; exit 4"}})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 4 || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("err = %v", err)
	}
}

// Cancelling kills the whole tree, including a grandchild.
func TestRunCancelKillsTree(t *testing.T) {
	t.Parallel()
	pidFile := t.TempDir() + "/pid"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Command{Path: "/bin/sh", Args: []string{"-c", "sleep 300 & echo $! > " + pidFile + "; echo started; wait"},
			Stdout: func([]byte) error { cancel(); return nil }})
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	// The kill is sent before Run returns; the kernel may take a moment to
	// finish the process off, so wait for it (dead or a zombie).
	testkit.WaitGone(t, pid)
}

func TestRunIdleTimeout(t *testing.T) {
	t.Parallel()
	err := Run(context.Background(), Command{Path: "/bin/sleep", Args: []string{"300"}, IdleTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrIdle) {
		t.Errorf("err = %v, want the idle timeout", err)
	}
}

func TestFindMissingIsPermanent(t *testing.T) {
	t.Parallel()
	_, err := Find("", "no-such-cli-xyz", "install it with npm i -g no-such-cli-xyz")
	if !backend.IsPermanent(err) || !strings.Contains(err.Error(), "npm i -g no-such-cli-xyz") {
		t.Errorf("err = %v", err)
	}
	if p, err := Find("sh", "whatever", ""); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("Find(sh) = %q, %v", p, err)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	if got := Status(context.Background(), "no-such-cli-xyz", "npm i -g it"); got != "missing: npm i -g it" {
		t.Errorf("missing CLI: %q", got)
	}
	script := t.TempDir() + "/fakecli"
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '1.2.3 (Fake)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Status(context.Background(), script, ""); got != script+" 1.2.3 (Fake) at "+script {
		t.Errorf("found CLI: %q", got)
	}
}
