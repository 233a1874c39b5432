package sdk_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The dependency test, in the style of Tailscale's tstest/deptest: the
// third-party modules a plugin author inherits from the SDK are listed here,
// so a new one is a decision somebody writes down, not an accident of an
// import.
//
// The author-facing packages are all of sdk/...: every public package below
// sdk/ is importable by a plugin author (examples/backend-echo imports
// sdk/plugin, sdk/backend and sdk/worker; its tests sdk/backendtest and
// sdk/plugin/plugintest; the first-party plugins also sdk/sandbox, sdk/tools
// and sdk/llm), and sdk/internal/... is reached through them anyway. So a new
// package under sdk/ is checked without anybody remembering to add it. sdk/
// is a module of its own: the listing runs in it (this directory).
const authorFacing = "./..."

// sdkModule is the SDK's module (sdk/go.mod); mainModule is the daemon's,
// which the SDK's module must never require (no allowedModules entry names
// it, so reaching it is a violation like any other module's).
const (
	sdkModule  = "github.com/agent-worker/agent-worker/sdk"
	mainModule = "github.com/agent-worker/agent-worker"
)

// The platforms the dependency lists are computed for: which files build
// changes what is reached (Landlock and seccomp are Linux-only).
var depsPlatforms = []string{"linux/amd64", "darwin/arm64"}

// allowedModules are the third-party modules the author-facing SDK may
// reach today, and why. A module reached on no platform any more must be
// removed, so the list stays the truth.
var allowedModules = map[string]string{
	// The plugin protocol: go-plugin over gRPC (Serve, the handshake, the
	// backend and document-provider services).
	"github.com/hashicorp/go-plugin":            "the plugin protocol (Serve, handshake)",
	"github.com/hashicorp/go-hclog":             "go-plugin's logger",
	"github.com/hashicorp/yamux":                "go-plugin's connection multiplexer",
	"github.com/oklog/run":                      "go-plugin's process group",
	"github.com/fatih/color":                    "hclog's colours",
	"github.com/mattn/go-colorable":             "hclog's colours",
	"github.com/mattn/go-isatty":                "hclog's terminal check",
	"google.golang.org/grpc":                    "the plugin protocol's transport",
	"google.golang.org/protobuf":                "the plugin protocol's messages (sdk/wire/pluginv1)",
	"github.com/golang/protobuf":                "go-plugin's generated code (grpc_broker, grpc_stdio)",
	"google.golang.org/genproto/googleapis/rpc": "gRPC status details",
	"golang.org/x/net":                          "gRPC's HTTP/2",
	"golang.org/x/text":                         "x/net's IDNA tables",
	"golang.org/x/sys":                          "syscalls: the sandbox, the subreaper, process groups",
	// The run sandbox (sdk/sandbox, applied by every backend built with the
	// SDK).
	"github.com/landlock-lsm/go-landlock":           "the run sandbox's file and network rules",
	"kernel.org/pub/linux/libs/security/libcap/psx": "go-landlock's all-threads syscalls",
	"github.com/elastic/go-seccomp-bpf":             "the run sandbox's seccomp filter",
	// sdk/worker: the client of the daemon's MCP server.
	"github.com/modelcontextprotocol/go-sdk": "sdk/worker's MCP client of the daemon's tools",
	"github.com/google/jsonschema-go":        "the MCP SDK's tool schemas",
	"github.com/yosida95/uritemplate/v3":     "the MCP SDK's resource templates",
	"github.com/segmentio/encoding":          "the MCP SDK's JSON",
	"github.com/segmentio/asm":               "segmentio/encoding's assembly",
	"golang.org/x/oauth2":                    "the MCP SDK's HTTP transport",
	"golang.org/x/sync":                      "the MCP SDK",
	"golang.org/x/time":                      "the MCP SDK's rate limits",
}

// deniedModules must never be reached from the author-facing SDK, whatever
// the allowlist says: they are the daemon's, and every plugin would carry
// them. A module path matches its entry or any module below it
// (github.com/riverqueue/river/riverdriver matches River).
var deniedModules = map[string]string{
	"github.com/jackc/pgx":                   "the daemon's PostgreSQL driver (cluster mode)",
	"github.com/riverqueue/river":            "the daemon's job queue (cluster mode)",
	"github.com/chromedp":                    "the daemon's headless browser",
	"github.com/prometheus/client_golang":    "the daemon's metrics",
	"github.com/anthropics/anthropic-sdk-go": "a model SDK: the first-party backends' business, not every plugin's",
	"github.com/openai/openai-go":            "a model SDK: the first-party backends' business, not every plugin's",
	"zombiezen.com/go/sqlite":                "the daemon's SQLite store",
	"modernc.org/sqlite":                     "the daemon's SQLite store",
}

// reached is one third-party module a root package reaches on a platform,
// and the first of its packages on the way.
type reached struct {
	Root, Platform, Module, Package string
}

// reachedModules runs `go list -deps` on the author-facing packages for a
// platform and returns, for each root package, the third-party modules it
// reaches (our own module and the standard library left out).
func reachedModules(t *testing.T, platform string) []reached {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "/")
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}\t{{join .Deps \" \"}}\t{{.DepOnly}}", authorFacing)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s for %s: %v", authorFacing, platform, err)
	}
	moduleOf := map[string]string{}
	type root struct {
		path string
		deps []string
	}
	var roots []root
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list: unexpected line %q", sc.Text())
		}
		moduleOf[f[0]] = f[1]
		if f[3] == "false" {
			roots = append(roots, root{f[0], strings.Fields(f[2])})
		}
	}
	var res []reached
	for _, r := range roots {
		seen := map[string]bool{}
		for _, d := range r.deps {
			m := moduleOf[d]
			if m == "" || m == sdkModule || seen[m] {
				continue
			}
			seen[m] = true
			res = append(res, reached{Root: strings.TrimPrefix(r.path, mainModule+"/"), Platform: platform, Module: m, Package: d})
		}
	}
	return res
}

// deniedReason says why a module is denied, or "" when it is not.
func deniedReason(mod string, denied map[string]string) string {
	for d, why := range denied {
		if mod == d || strings.HasPrefix(mod, d+"/") {
			return why
		}
	}
	return ""
}

// depViolations names every module reached that is denied or not allowed,
// and every allowed module no longer reached on any platform.
func depViolations(got []reached, allowed, denied map[string]string) []string {
	var out []string
	used := map[string]bool{}
	said := map[string]bool{}
	for _, r := range got {
		used[r.Module] = true
		key := r.Root + " " + r.Module
		if said[key] {
			continue
		}
		if why := deniedReason(r.Module, denied); why != "" {
			said[key] = true
			out = append(out, fmt.Sprintf("%s now reaches %s (package %s, %s): the author-facing SDK must not pull %s; every third-party plugin would carry it", r.Root, r.Module, r.Package, r.Platform, why))
			continue
		}
		if _, ok := allowed[r.Module]; !ok {
			said[key] = true
			out = append(out, fmt.Sprintf("%s now reaches %s (package %s, %s): the author-facing SDK must not pull a module that allowedModules in sdk/deps_test.go does not name; every third-party plugin inherits it (if it is truly needed, add it there with the reason)", r.Root, r.Module, r.Package, r.Platform))
		}
	}
	for m := range allowed {
		if !used[m] {
			out = append(out, fmt.Sprintf("allowed module %s is no longer reached by the author-facing SDK: remove it from allowedModules in sdk/deps_test.go", m))
		}
	}
	slices.Sort(out)
	return out
}

func TestDepsOfTheAuthorFacingSDK(t *testing.T) {
	var got []reached
	for _, p := range depsPlatforms {
		got = append(got, reachedModules(t, p)...)
	}
	if len(got) == 0 {
		t.Fatal("go list found no third-party module at all: the listing is broken (the SDK needs go-plugin)")
	}
	if v := depViolations(got, allowedModules, deniedModules); len(v) > 0 {
		t.Errorf("the author-facing SDK's dependencies changed:\n%s", strings.Join(v, "\n"))
	}
}

// The check itself catches a denied module, a module nobody allowed, and
// an allowed module no longer used.
func TestDepsViolationsCatchNewModules(t *testing.T) {
	allowed := map[string]string{"google.golang.org/grpc": "", "example.com/gone": ""}
	denied := map[string]string{"github.com/jackc/pgx": "the daemon's PostgreSQL driver", "github.com/riverqueue/river": "the job queue"}
	got := []reached{
		{Root: "sdk/plugin", Platform: "linux/amd64", Module: "google.golang.org/grpc", Package: "google.golang.org/grpc"},
		{Root: "sdk/backend", Platform: "linux/amd64", Module: "github.com/jackc/pgx/v5", Package: "github.com/jackc/pgx/v5/pgconn"},
		{Root: "sdk/backend", Platform: "darwin/arm64", Module: "github.com/jackc/pgx/v5", Package: "github.com/jackc/pgx/v5/pgconn"},
		{Root: "sdk/worker", Platform: "linux/amd64", Module: "github.com/riverqueue/river/rivertype", Package: "github.com/riverqueue/river/rivertype"},
		{Root: "sdk/tools", Platform: "linux/amd64", Module: "example.com/new", Package: "example.com/new/x"},
	}
	want := []string{
		"allowed module example.com/gone is no longer reached by the author-facing SDK: remove it from allowedModules in sdk/deps_test.go",
		"sdk/backend now reaches github.com/jackc/pgx/v5 (package github.com/jackc/pgx/v5/pgconn, linux/amd64): the author-facing SDK must not pull the daemon's PostgreSQL driver; every third-party plugin would carry it",
		"sdk/tools now reaches example.com/new (package example.com/new/x, linux/amd64): the author-facing SDK must not pull a module that allowedModules in sdk/deps_test.go does not name; every third-party plugin inherits it (if it is truly needed, add it there with the reason)",
		"sdk/worker now reaches github.com/riverqueue/river/rivertype (package github.com/riverqueue/river/rivertype, linux/amd64): the author-facing SDK must not pull the job queue; every third-party plugin would carry it",
	}
	if diff := cmp.Diff(want, depViolations(got, allowed, denied)); diff != "" {
		t.Errorf("depViolations (-want +got):\n%s", diff)
	}
}

// No module is both allowed and denied.
func TestDepsAllowAndDenyListsAgree(t *testing.T) {
	for m := range allowedModules {
		if why := deniedReason(m, deniedModules); why != "" {
			t.Errorf("%s is both allowed and denied (%s)", m, why)
		}
	}
}
