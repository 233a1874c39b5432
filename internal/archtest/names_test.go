package archtest_test

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
	var lines []string
	for _, dir := range []string{rootDir, sdkDir} {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list in %s: %v", dir, err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(out)), "\n")...)
	}
	for _, line := range lines {
		importPath, name, _ := strings.Cut(line, " ")
		if importPath == module+"/sdk" {
			continue
		}
		if path.Base(importPath) == "sdk" || name == "sdk" {
			t.Errorf("%s (package %s) shares its name with the plugin SDK %s/sdk: rename it", importPath, name, module)
		}
	}
}
