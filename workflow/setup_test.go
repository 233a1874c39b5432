package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

func setupFile(t *testing.T, setup string) *File {
	t.Helper()
	src := "agents: {a: {backend: mock}}\nparams: [{name: who, default: you}]\nsetup:\n" + setup
	f, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRunSetup(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		setup   string
		vars    Vars
		want    map[string]string // "$DIR" is the workflow's directory
		wantErr string
	}{
		"chained": {
			setup: "  - {shell: echo hello, as: greeting}\n  - {shell: 'echo ${{ greeting }} world', as: out}\n",
			want:  map[string]string{"greeting": "hello", "out": "hello world"},
		},
		"params and env": {
			setup: "  - {shell: 'echo ${{ params.who }} ${{ env.AW_X }}', as: out}\n",
			vars:  Vars{Env: func(k string) (string, bool) { return "x=" + k, true }},
			want:  map[string]string{"out": "you x=AW_X"},
		},
		"runs in the file's directory": {
			setup: "  - {shell: pwd -P, as: dir}\n",
			want:  map[string]string{"dir": "$DIR"},
		},
		"stdin is empty": {
			setup: "  - {shell: 'cat; echo done', as: out}\n",
			want:  map[string]string{"out": "done"},
		},
		"no as": {
			setup: "  - {shell: echo ignored}\n",
			want:  map[string]string{},
		},
		"failure": {
			setup:   "  - {shell: echo ok}\n  - {shell: 'echo out; echo broken >&2; exit 1'}\n",
			wantErr: "setup step 2 (line 5) failed: exit status 1: broken",
		},
		"missing env": {
			setup:   "  - {shell: 'echo ${{ env.AW_TEST_NOT_SET_ANYWHERE }}'}\n",
			wantErr: "setup step 1 (line 4): environment variable AW_TEST_NOT_SET_ANYWHERE is not set: set it before starting the workflow",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setupFile(t, tc.setup)
			got, err := RunSetup(context.Background(), f, tc.vars)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir, err := filepath.EvalSymlinks(f.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				tc.want[k] = strings.ReplaceAll(v, "$DIR", dir)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunSetupTimeout: a step past its timeout is killed with its children,
// which would otherwise hold its output open for a minute.
func TestRunSetupTimeout(t *testing.T) {
	t.Parallel()
	// The timeout leaves sh ample time to start its child and say its pid.
	f := setupFile(t, "  - {shell: 'sleep 600 & echo $! > child.pid; sleep 600', timeout: 1s}\n")
	_, err := RunSetup(context.Background(), f, Vars{})
	if err == nil || !strings.Contains(err.Error(), "setup step 1 (line 4) timed out after 1s") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	// The whole group died, not just sh: the backgrounded child ends too
	// (killed, not left to its 600 s). Without the group kill RunSetup
	// would still return, after cmd.WaitDelay, with the child running.
	b, err := os.ReadFile(filepath.Join(f.Dir, "child.pid"))
	if err != nil {
		t.Fatalf("the step wrote no pid of its child: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child.pid = %q: %v", b, err)
	}
	t.Cleanup(func() { // should the test fail
		if p, err := os.FindProcess(child); err == nil {
			p.Kill()
		}
	})
	testkit.WaitFor(t, fmt.Sprintf("the step's backgrounded child %d to end with it", child), func() bool { return !testkit.Alive(child) })
}

func TestRunSetupCanceled(t *testing.T) {
	t.Parallel()
	f := setupFile(t, "  - {shell: sleep 60}\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunSetup(ctx, f, Vars{}); err == nil || !strings.Contains(err.Error(), "stopped: context canceled") {
		t.Fatalf("error = %v, want stopped", err)
	}
}
