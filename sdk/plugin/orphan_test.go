//go:build unix

package plugin

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestChildGroups(t *testing.T) {
	t.Parallel()
	const self, group = 100, 100
	tests := map[string]struct {
		procs []proc
		want  []int
	}{
		"none": {},
		"children leading their own groups": {
			procs: []proc{{pid: 101, ppid: self, pgid: 101}, {pid: 102, ppid: self, pgid: 102}},
			want:  []int{101, 102},
		},
		"a child in the plugin's group dies with it anyway": {
			procs: []proc{{pid: 101, ppid: self, pgid: group}},
		},
		"a child in a group it does not lead is not ours to kill": {
			procs: []proc{{pid: 101, ppid: self, pgid: 7}},
		},
		"grandchildren and strangers": {
			procs: []proc{{pid: 1, ppid: 0, pgid: 1}, {pid: self, ppid: 50, pgid: group}, {pid: 201, ppid: 101, pgid: 201}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, childGroups(tt.procs, self, group)); diff != "" {
				t.Errorf("childGroups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatchParent(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		ppids []int // getppid's answers in turn; the last repeats
		gone  bool
	}{
		"parent alive":                 {ppids: []int{42}},
		"parent exits":                 {ppids: []int{42, 42, 1}, gone: true},
		"reparented to a subreaper":    {ppids: []int{42, 42, 42, 7}, gone: true},
		"parent gone before the watch": {ppids: []int{1}, gone: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Each answer is handed over on asked, so the test knows how
			// many checks the watch has made without sleeping.
			asked, quit := make(chan int), make(chan struct{})
			var calls atomic.Int64
			getppid := func() int {
				n := int(calls.Add(1)) - 1
				p := tt.ppids[min(n, len(tt.ppids)-1)]
				if n > 0 {
					select {
					case asked <- n:
					case <-quit: // the test is over
					}
				}
				return p
			}
			gone := make(chan struct{})
			stop := watchParent(getppid, time.Millisecond, func() { close(gone) })
			defer func() { close(quit); stop() }()
			deadline := time.After(10 * time.Second)
			for {
				select {
				case <-gone:
					if !tt.gone {
						t.Fatal("gone called while the parent lives")
					}
					return
				case n := <-asked:
					if !tt.gone && n >= 2*len(tt.ppids)+3 {
						return // checked well past the last answer: still watching
					}
				case <-deadline:
					t.Fatalf("after %d checks, gone not called", calls.Load())
				}
			}
		})
	}
}

// orphanEnv makes the test binary one of the processes of
// TestWatchParentSeesItsParentExit: "middle" starts the watcher and exits
// once it watches, "watcher" writes "gone" to fd 3 when it sees that.
const orphanEnv = "AGENT_WORKER_ORPHAN_TEST"

func TestWatchParentSeesItsParentExit(t *testing.T) {
	if os.Getenv(orphanEnv) != "" {
		t.Skip("a helper process")
	}
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	middle := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
	middle.Env = append(os.Environ(), orphanEnv+"=middle")
	middle.ExtraFiles = []*os.File{w}
	middle.Stderr = os.Stderr
	if err := middle.Run(); err != nil {
		t.Fatalf("middle process: %v", err)
	}
	w.Close() // the orphaned watcher holds the only write end now
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(r).ReadString('\n')
	if strings.TrimSpace(line) != "gone" {
		t.Fatalf("the watcher, orphaned, said %q (%v), want gone", line, err)
	}
}

// TestOrphanHelper is the middle process and the watcher of
// TestWatchParentSeesItsParentExit, and skips in a normal test run.
func TestOrphanHelper(t *testing.T) {
	switch os.Getenv(orphanEnv) {
	case "middle":
		watcher := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
		watcher.Env = append(os.Environ(), orphanEnv+"=watcher")
		watcher.ExtraFiles = []*os.File{os.NewFile(3, "report")}
		watcher.Stderr = os.Stderr
		out, err := watcher.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := watcher.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "watching\n" {
			t.Fatalf("watcher said %q", line)
		}
		os.Exit(0) // orphan it, without the test framework's output
	case "watcher":
		gone := make(chan struct{})
		watchParent(os.Getppid, 5*time.Millisecond, func() { close(gone) })
		os.Stdout.WriteString("watching\n")
		select {
		case <-gone:
			os.NewFile(3, "report").WriteString("gone\n")
			os.Exit(0)
		case <-time.After(time.Minute):
			os.Exit(1) // the test has failed long ago: leave no process behind
		}
	default:
		t.Skip("a helper process of TestWatchParentSeesItsParentExit")
	}
}
