package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"time"
)

// RunSetup runs f's setup steps in order with `sh -c` in f.Dir, each with its
// shell interpolated from v and the results of the steps before it. It
// returns the trimmed stdout of every step that has an as: name. A step that
// fails or outlives its timeout stops the setup: the workflow must not start
// on half its inputs.
func RunSetup(ctx context.Context, f *File, v Vars) (map[string]string, error) {
	results := map[string]string{}
	v.Setup = maps.Clone(v.Setup)
	if v.Setup == nil {
		v.Setup = map[string]string{}
	}
	for i, st := range f.Setup {
		r := newResolver(f, v)
		shell := r.expand("", st.Shell)
		if err := errors.Join(r.errs...); err != nil {
			return nil, fmt.Errorf("setup step %d (line %d): %w", i+1, st.Line, err)
		}
		out, err := runShell(ctx, f.Dir, shell, st.Timeout)
		if err != nil {
			return nil, fmt.Errorf("setup step %d (line %d) %w", i+1, st.Line, err)
		}
		if st.As != "" {
			results[st.As] = out
			v.Setup[st.As] = out
		}
	}
	return results, nil
}

// runShell runs one command with stdin empty and returns its trimmed stdout.
// At the timeout its whole process group is killed, so a backgrounded child
// cannot keep the setup waiting on its output.
func runShell(ctx context.Context, dir, shell string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = defaultSetupTimeout
	}
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(stepCtx, "sh", "-c", shell)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // for children that left the group but hold our pipes
	killGroup(cmd)
	err := cmd.Run()
	detail := ""
	if s := strings.TrimSpace(stderr.String()); s != "" {
		const limit = 2000
		if len(s) > limit {
			s = "…" + s[len(s)-limit:]
		}
		detail = ": " + s
	}
	switch {
	case err == nil:
		return strings.TrimSpace(stdout.String()), nil
	case ctx.Err() != nil:
		return "", fmt.Errorf("stopped: %w", ctx.Err())
	case stepCtx.Err() != nil:
		return "", fmt.Errorf("timed out after %s (raise its timeout: if it needs longer)%s", timeout, detail)
	}
	return "", fmt.Errorf("failed: %w%s", err, detail)
}
