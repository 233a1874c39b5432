package contract

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The contract is a leaf: everything it depends on, all the way down, is
// the standard library, its tests' dependencies included. The store speaks
// it and every surface carries it, so an import here would reach all of
// them; host/api above all, which imports the SDK and the workflow parser,
// must never be one.
func TestContractIsALeaf(t *testing.T) {
	const self = "github.com/agent-worker/agent-worker/host/contract"
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !slices.Contains(deps, self) {
		t.Fatalf("go list -deps did not list the package itself, so it proves nothing: %q", deps)
	}
	for _, dep := range deps {
		// The package under test shows as itself, its test variant
		// "host/contract [host/contract.test]" and the test binary.
		if dep == self || dep == self+".test" || strings.HasPrefix(dep, self+" [") {
			continue
		}
		t.Errorf("host/contract depends on %s: it may import the standard library only", dep)
	}
}

// Every code has an HTTP status and an exit code of its own table entry.
func TestEveryCodeHasAStatusAndAnExitCode(t *testing.T) {
	for _, c := range []Code{CodeInvalid, CodeNotFound, CodeConflict, CodeUnauthorized, CodePermission, CodeTooLarge,
		CodeMediaType, CodeUnavailable, CodeInternal, CodeUnreachable} {
		if _, ok := codeTable[c]; !ok {
			t.Errorf("code %s has no entry in the code table", c)
		}
	}
}
