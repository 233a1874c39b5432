package sdk_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// sdk is the plugin SDK and nothing else: a second package called sdk (by
// folder or by package name) would make a reader, and an import line, ask
// which one is meant. The direct-API backend is plugins/direct for this
// reason, though users still call the backend "sdk".
func TestOnlyTheSDKIsCalledSDK(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		importPath, name, _ := strings.Cut(line, " ")
		if importPath == module+"/sdk" {
			continue
		}
		if path.Base(importPath) == "sdk" || name == "sdk" {
			t.Errorf("%s (package %s) shares its name with the plugin SDK %s/sdk: rename it", importPath, name, module)
		}
	}
}
