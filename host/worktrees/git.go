package worktrees

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// repoEnv are git's variables that point it at another repository, index
// or object store than the -C directory: a daemon started from inside a git
// hook would otherwise act on the hook's repository.
var repoEnv = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX"}

// gitEnv is the environment of every git command: the daemon's, without
// repoEnv, never prompting, and taking no optional locks (so a status in
// the user's checkout does not rewrite its index under them).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(repoEnv, name) && name != "GIT_TERMINAL_PROMPT" && name != "GIT_OPTIONAL_LOCKS" {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// gitError is a git command that exited with a non-zero status.
type gitError struct {
	args   []string
	code   int
	stderr string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.code)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

// exitCode is the exit status of the git command behind err, or -1.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// errNoGit is the git program missing from the daemon's PATH.
var errNoGit = errors.New("git is not installed (not found on the daemon's PATH)")

// git runs `git -C dir args...` and returns its stdout with the final
// newline trimmed. A non-zero exit is a *gitError carrying stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitIn(ctx, dir, nil, args...)
}

// gitIn is git with stdin.
func gitIn(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "", errNoGit
	case errors.As(err, &exit):
		return stdout.String(), &gitError{args: args, code: exit.ExitCode(), stderr: stderr.String()}
	case err != nil:
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// branchRef is the full ref of a local branch.
func branchRef(branch string) string { return "refs/heads/" + branch }

// revParse returns the commit ref names, or "" when there is none.
func revParse(ctx context.Context, repo, ref string) (string, error) {
	out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if exitCode(err) == 1 {
		return "", nil
	}
	return out, err
}
