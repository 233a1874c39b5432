package testkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Race is whether this test binary runs with the race detector (go test
// -race). RaceBuild's binaries have it then too.
const Race = raceEnabled

const module = "github.com/agent-worker/agent-worker"

// builds are the binaries built so far in this test process, by package
// and linker flags, in one temp dir RemoveBuilds deletes.
var builds struct {
	sync.Mutex // held for a whole build: two cores gain nothing from more
	dir        string
	bins       map[string]string
}

// Build builds the main package pkg, a path from the module root such as
// "cmd/agent-worker-backend-mock", once per test process, and returns the
// binary's path. ldflags go to the linker ("-X main.version=1.0.0"); each
// set is a binary of its own. The binary is shared: copy it (Install)
// before changing or moving it. A failed build fails t.
//
// It builds without the race detector: for a binary whose process gets no
// GORACE from the test (a plugin started by a daemon inside the test
// process), a report would end in a debug log, unread, and the detector
// would only slow it (a second of sleep at every exit). RaceBuild is for
// binaries whose reports a test reads.
func Build(t testing.TB, pkg string, ldflags ...string) string {
	t.Helper()
	bin, err := BuildE(pkg, ldflags...)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildE is Build for TestMain, which has no t to fail.
func BuildE(pkg string, ldflags ...string) (string, error) {
	return build(pkg, false, ldflags)
}

// RaceBuild is Build with the race detector when this test binary has it
// (Race), for a binary the test starts with GORACE set so that it reads
// what the detector reports: the daemon and, through the GORACE it passes
// on, its plugins (see cmd/agent-worker's cli).
func RaceBuild(t testing.TB, pkg string, ldflags ...string) string {
	t.Helper()
	bin, err := RaceBuildE(pkg, ldflags...)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RaceBuildE is RaceBuild for TestMain.
func RaceBuildE(pkg string, ldflags ...string) (string, error) {
	return build(pkg, Race, ldflags)
}

// buildMode is how a binary is built: with the race detector, with
// linker flags, or as a release.
type buildMode struct {
	race    bool
	flags   string
	release bool
}

func build(pkg string, race bool, ldflags []string) (string, error) {
	return buildAs(pkg, buildMode{race: race, flags: strings.Join(ldflags, " ")})
}

func buildAs(pkg string, m buildMode) (string, error) {
	flags := m.flags
	builds.Lock()
	defer builds.Unlock()
	key := fmt.Sprint(pkg, "\x00", flags, "\x00", m.race, "\x00", m.release)
	if bin, ok := builds.bins[key]; ok {
		return bin, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "aw-bin-")
		if err != nil {
			return "", err
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	// A directory per binary keeps the package's name as the file's:
	// plugins are found by name, and a process list reads better.
	dir := filepath.Join(builds.dir, fmt.Sprint(len(builds.bins)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	// -buildvcs=false: a binary a test builds reports the version the test
	// binary does (go test never stamps one). With Go's default (auto) a
	// build in a git checkout takes its version from the commit, and
	// tests comparing the daemon's version with api.Version failed in a
	// fresh clone.
	args := []string{"build", "-buildvcs=false", "-o", bin}
	if !m.release {
		args = append(args, "-tags", TestHooksTag)
	}
	if m.race {
		args = append(args, "-race")
	}
	if flags != "" {
		args = append(args, "-ldflags", flags)
	}
	cmd := exec.Command("go", append(args, "./"+pkg)...)
	cmd.Dir = root
	if m.release {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	builds.bins[key] = bin
	return bin, nil
}

// TestHooksTag is the build tag under which the daemon reads its
// AGENT_WORKER_TEST_* switches (cmd/agent-worker/testhooks.go). Build and
// RaceBuild set it; ReleaseBuild builds as make dist does, without it.
const TestHooksTag = "agentworker_testhooks"

// ReleaseBuild builds pkg as make build and make dist do (no cgo, no race
// detector, no test hooks), for a test that checks what a user's binary
// does. It leaves out dist's -trimpath, which changes nothing a test can
// see and would compile every dependency again.
func ReleaseBuild(t testing.TB, pkg string) string {
	t.Helper()
	bin, err := buildAs(pkg, buildMode{release: true})
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RemoveBuilds deletes what Build made. TestMain calls it after m.Run
// (Main does); a package that builds without one leaves its binaries in
// the temp dir.
func RemoveBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
		builds.dir, builds.bins = "", nil
	}
}

// Main is a TestMain for a package that builds binaries and needs nothing
// else before its tests: it runs them, removes the builds, and exits.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}

// Install copies the binary bin into dir as name the way a user should
// install a plugin: written to a temporary name, then renamed into place,
// so that a daemon watching dir never sees half a file. It returns the
// installed path.
func Install(t testing.TB, bin, dir, name string) string {
	t.Helper()
	dst, err := InstallE(bin, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// InstallE is Install for TestMain, which has no t to fail. It copies
// rather than links: a test may change what it installed.
func InstallE(bin, dir, name string) (string, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, name)
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// moduleRoot is the directory of this module's go.mod, found from the
// test's working directory (its package's directory) upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			first := ""
			if s := bufio.NewScanner(f); s.Scan() {
				first = strings.TrimSpace(s.Text())
			}
			f.Close()
			if first == "module "+module {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testkit: no go.mod of " + module + " above the working directory")
		}
		dir = parent
	}
}
