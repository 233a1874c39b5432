package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/agent-worker/agent-worker/"

// testHelpers names every package of the module among deps (each "path:
// imports...", as go list prints them below) that is a test helper: the
// test kit, a package named *test (store/pgtest and the like), or one
// that imports package testing. A tool built from them would carry test
// code (and pgtest's shared cluster) into a program.
func testHelpers(deps []string) []string {
	var out []string
	for _, line := range deps {
		path, imports, _ := strings.Cut(line, ":")
		rel, ours := strings.CutPrefix(path, module)
		switch {
		case !ours:
		case rel == "internal/testkit" || strings.HasSuffix(rel, "test"):
			out = append(out, rel+" is a test helper")
		case strings.Contains(" "+imports+" ", " testing "):
			out = append(out, rel+" imports testing")
		}
	}
	return out
}

// The bench and the chaos tool are programs: none of the module's packages
// they are built from is a test helper (issue 42).
func TestToolsImportNoTestHelpers(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"./internal/cmd/agent-worker-bench", "./internal/cmd/agent-worker-chaos"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", tool)
		cmd.Dir = "../../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", tool, err)
		}
		var deps []string
		for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
			deps = append(deps, s.Text())
		}
		if v := testHelpers(deps); len(v) > 0 {
			t.Errorf("%s is built from test helpers:\n%s", tool, strings.Join(v, "\n"))
		}
	}
}

// The check itself catches each kind of test helper.
func TestTestHelpersCatches(t *testing.T) {
	t.Parallel()
	deps := []string{
		"testing: fmt",
		"github.com/hashicorp/go-plugin: fmt testing", // not ours: go-plugin links testing itself
		module + "internal/pgserver: context os",
		module + "store/pgtest: " + module + "internal/pgserver testing",
		module + "internal/testkit: os",
		module + "host/helper: fmt testing",
	}
	want := []string{
		"store/pgtest is a test helper",
		"internal/testkit is a test helper",
		"host/helper imports testing",
	}
	if diff := cmp.Diff(want, testHelpers(deps)); diff != "" {
		t.Errorf("testHelpers (-want +got):\n%s", diff)
	}
}
