package sdk_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/agent-worker/agent-worker"

// pluginSide are the trees a plugin author's binary is built from; they may
// not reach the daemon's internals (ARCHITECTURE.md "Layout").
var pluginSide = []string{"./sdk/...", "./plugins/...", "./docs-provider/..."}

var forbidden = []string{module + "/host", module + "/store", module + "/workflow"}

type pkg struct {
	ImportPath string
	Deps       []string
	Dir        string
	GoFiles    []string
}

// listPackages runs `go list` from the module root.
func listPackages(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps=false", "-json"}, patterns...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// violations names every forbidden package any of pkgs depends on.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, d := range p.Deps {
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					out = append(out, p.ImportPath+" imports "+d)
				}
			}
		}
	}
	return out
}

func TestPluginSideImportsNoDaemonInternals(t *testing.T) {
	if v := violations(listPackages(t, pluginSide...)); len(v) > 0 {
		t.Errorf("plugin-side packages reach daemon internals:\n%s", strings.Join(v, "\n"))
	}
}

// The check itself must catch a violation, directly or through a
// dependency.
func TestViolationsCatchesForbiddenImports(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: module + "/plugins/mock", Deps: []string{"fmt", module + "/sdk"}},
		{ImportPath: module + "/plugins/bad", Deps: []string{module + "/store"}},
		{ImportPath: module + "/docs-provider/bad", Deps: []string{module + "/host/api"}},
		{ImportPath: module + "/sdk/ok", Deps: []string{module + "/hostile"}},
	}
	want := []string{
		module + "/plugins/bad imports " + module + "/store",
		module + "/docs-provider/bad imports " + module + "/host/api",
	}
	if diff := cmp.Diff(want, violations(pkgs)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// Every package says who it is for (CONVENTIONS.md, Tailscale's rule).
func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range listPackages(t, "./...") {
		documented := false
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc != nil && strings.TrimSpace(file.Doc.Text()) != "" {
				documented = true
			}
		}
		if !documented {
			t.Errorf("package %s has no doc comment: add a doc.go that says who should use it", p.ImportPath)
		}
	}
}
