package archtest_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/agent-worker/agent-worker"

// pluginSide are the trees a plugin author's binary is built from; they may
// not reach the daemon's internals (ARCHITECTURE.md "Layout"). The SDK is
// checked too, though its module does not require the daemon's: go list
// runs in sdk/ for it (sdkDir).
var pluginSide = []string{"./plugins/...", "./docs-provider/..."}

// rootDir is the repository's root, where the daemon's module is; sdkDir
// is the SDK's module (sdk/go.mod).
const (
	rootDir = "../.."
	sdkDir  = "../../sdk"
)

var forbidden = []string{module + "/host", module + "/store", module + "/workflow"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Dir        string
	GoFiles    []string
}

// listPackages runs `go list` from the daemon's module root.
func listPackages(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	return listPackagesIn(t, rootDir, patterns...)
}

// listPackagesIn runs `go list` in dir: rootDir or sdkDir.
func listPackagesIn(t *testing.T, dir string, patterns ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps=false", "-json"}, patterns...)...)
	cmd.Dir = dir
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
	pkgs := append(listPackages(t, pluginSide...), listPackagesIn(t, sdkDir, "./...")...)
	if v := violations(pkgs); len(v) > 0 {
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

// Every package says who it is for (CONVENTIONS.md, Tailscale's rule), in
// both modules.
func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range append(listPackages(t, "./..."), listPackagesIn(t, sdkDir, "./...")...) {
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

// kernel says which of the daemon's own packages each kernel package may
// import directly (host/doc.go and each package's doc.go say why). Only
// host/api (the one error table, api.FromSDK) and host/docs (the document
// providers' side of the plugin boundary) import package sdk, whose error classes stop there. host/ is
// the wiring: it may import every part, and only cmd/agent-worker may
// import it. Nothing but host/ imports the HTTP layer. A package missing
// here is a violation too, so a new room must say where it sits.
var kernel = map[string][]string{
	"host":                  {"host/agents", "host/api", "host/catalog", "host/certs", "host/cluster", "host/console", "host/contract", "host/docs", "host/efforts", "host/gate", "host/httpapi", "host/internal/backoff", "host/mcpserver", "host/metrics", "host/notify", "host/replay", "host/runner", "host/sandbox", "host/scheduler", "host/team", "host/telemetry", "host/triggers", "host/workflows", "host/worktrees", "host/mergequeue", "sdk/backend", "sdk/sandbox", "sdk/tools", "store"},
	"host/api":              {"host/contract", "sdk", "sdk/backend", "sdk/tools", "workflow"},
	"host/contract":         {},
	"store":                 {"host/contract", "sdk/backend", "sdk/tools"},
	"host/certs":            {"host/api"},
	"host/metrics":          {"host/api", "sdk/backend", "store"},
	"host/cluster":          {"host/api", "host/internal/backoff", "host/notify", "host/team", "store"},
	"host/notify":           {"host/api", "host/internal/backoff", "store", "workflow"},
	"host/console":          {"host/api", "sdk/backend"},
	"host/internal/fswatch": {},
	"host/internal/backoff": {},
	"host/telemetry":        {},
	"host/team":             {"host/api", "host/contract", "host/notify", "host/telemetry", "sdk/backend", "sdk/docprovider", "store"},
	"host/mcpserver":        {"host/api", "host/efforts", "host/team", "host/telemetry", "sdk/tools", "store", "workflow/skill"},
	"host/efforts":          {"host/api", "host/contract", "host/internal/fswatch", "host/team", "sdk/tools", "store", "workflow", "workflow/skill"},
	"host/gate":             {"host/contract", "sdk/backend", "store", "workflow/skill"},
	"host/runner":           {"host/api", "host/catalog", "host/contract", "host/pluginclient", "host/prices", "host/runspec", "host/sandbox", "host/spares", "host/telemetry", "sdk/backend", "sdk/llm", "sdk/plugin", "sdk/sandbox", "store"},
	"host/spares":           {"host/api", "sdk/plugin"},
	"host/docs":             {"docs-provider/file", "docs-provider/sqlite", "host/api", "host/catalog", "host/internal/backoff", "host/pluginclient", "sdk", "sdk/docprovider", "sdk/plugin", "store"},
	"host/prices":           {"sdk/backend", "store"},
	"host/catalog":          {"host/api", "host/internal/fswatch", "host/pluginclient", "sdk/plugin"},
	"host/pluginclient":     {"sdk/backend", "sdk/docprovider", "sdk/plugin", "sdk/wire/client", "sdk/wire/grpcerr", "sdk/wire/pluginv1"},
	"host/runspec":          {"sdk/backend", "store"},
	"host/replay":           {"host/api", "host/contract", "host/runspec", "internal/modelwire", "sdk/backend", "sdk/llm", "store"},
	"host/sandbox":          {"host/api", "sdk/backend", "sdk/sandbox"},
	"host/scheduler":        {"host/api", "host/contract", "host/internal/backoff", "host/notify", "host/runspec", "host/team", "host/telemetry", "sdk/backend", "store", "workflow"},
	"host/agents":           {"host/api", "sdk/backend", "sdk/llm", "sdk/plugin", "store", "workflow"},
	"host/workflows":        {"host/agents", "host/api", "host/internal/fswatch", "host/notify", "host/team", "host/telemetry", "sdk/plugin", "store", "workflow"},
	"host/httpapi":          {"host/agents", "host/api", "host/contract", "host/efforts", "host/team", "host/triggers", "host/workflows", "sdk/backend", "sdk/tools", "store", "workflow", "workflow/skill"},
	"host/triggers":         {"host/api", "host/team", "host/telemetry", "store", "workflow"},
	"host/worktrees":        {"host/api", "host/team", "sdk/backend", "sdk/tools", "store", "workflow"},
	"host/mergequeue":       {"host/api", "host/team", "host/worktrees", "sdk/sandbox", "sdk/tools", "store", "workflow"},
	// The YAML node helpers of every YAML reader, plugins' included:
	// the YAML library only.
	"internal/yamlnode": {},
	// The model APIs' answers as a stand-in model writes them (the
	// tests' scripted server, a replay's): the standard library only.
	"internal/modelwire": {},
}

// kernelViolations names every direct import of the module's own packages
// that the layering does not allow.
func kernelViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		allowed, inKernel := kernel[name]
		if strings.HasPrefix(name, "host") && !inKernel {
			out = append(out, p.ImportPath+" is a kernel package the layering does not know: add it to kernel with what it may import")
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module+"/")
			switch {
			case !ours:
			case dep == "host" && name != "cmd/agent-worker":
				out = append(out, p.ImportPath+" imports "+imp+": only cmd/agent-worker may import the daemon's wiring")
			case dep == "host/httpapi" && name != "host":
				out = append(out, p.ImportPath+" imports "+imp+": only host/ may import the HTTP layer")
			case inKernel && !slices.Contains(allowed, dep):
				out = append(out, p.ImportPath+" imports "+imp+": not in its allowed imports")
			}
		}
	}
	return out
}

func TestKernelLayering(t *testing.T) {
	if v := kernelViolations(listPackages(t, "./...")); len(v) > 0 {
		t.Errorf("the kernel's layering is broken:\n%s", strings.Join(v, "\n"))
	}
}

// The layering check itself catches each kind of violation.
func TestKernelViolationsCatchesBadArrows(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: module + "/host", Imports: []string{module + "/host/httpapi", module + "/host/scheduler"}},
		{ImportPath: module + "/cmd/agent-worker", Imports: []string{module + "/host"}},
		{ImportPath: module + "/host/scheduler", Imports: []string{module + "/host", module + "/host/workflows", "fmt"}},
		{ImportPath: module + "/host/workflows", Imports: []string{module + "/host/httpapi"}},
		{ImportPath: module + "/host/newroom", Imports: nil},
		{ImportPath: module + "/cmd/other", Imports: []string{module + "/host/httpapi"}},
	}
	want := []string{
		module + "/host/scheduler imports " + module + "/host: only cmd/agent-worker may import the daemon's wiring",
		module + "/host/scheduler imports " + module + "/host/workflows: not in its allowed imports",
		module + "/host/workflows imports " + module + "/host/httpapi: only host/ may import the HTTP layer",
		module + "/host/newroom is a kernel package the layering does not know: add it to kernel with what it may import",
		module + "/cmd/other imports " + module + "/host/httpapi: only host/ may import the HTTP layer",
	}
	if diff := cmp.Diff(want, kernelViolations(pkgs)); diff != "" {
		t.Errorf("kernelViolations (-want +got):\n%s", diff)
	}
}
