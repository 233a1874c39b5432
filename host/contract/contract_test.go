package contract

import (
	"os/exec"
	"strings"
	"testing"
)

// The contract is a leaf: everything it depends on, all the way down, is
// the standard library. The store speaks it and every surface carries it,
// so an import here would reach all of them.
func TestContractIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/agent-worker/agent-worker/host/contract" {
			t.Errorf("host/contract depends on %s: it may import the standard library only", dep)
		}
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
