package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// thirdPartyPlugin is a whole third-party backend in 25 lines: a main
// package importing nothing of agent-worker but the author-facing SDK.
const thirdPartyPlugin = `// Command agent-worker-backend-hello is a third-party backend built against
// the author-facing SDK alone: it answers every run with one line.
package main

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

type hello struct{}

func (hello) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	if err := events.Send(backend.Event{Kind: backend.EventText, Text: "hello\n"}); err != nil {
		return err
	}
	return events.Send(backend.Event{Kind: backend.EventResult, Text: "said hello"})
}

func main() {
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "hello", Version: "1.0.0"}, Backend: hello{}})
}
`

// A plugin author's module: the plugin above, requiring the SDK module of
// this checkout (replace to sdk/), as `go get .../sdk` would. What it
// links, what its go.sum holds and what `go mod graph` lists must hold
// none of the denied modules (docs/architecture.md, "the SDK's module").
func TestThirdPartyPluginBuildsAgainstTheSDKAlone(t *testing.T) {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gomod := "module example.com/hello\n\ngo 1.26.8\n\nrequire " + sdkModule + " v0.0.0\n\nreplace " + sdkModule + " => " + dir + "\n"
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(thirdPartyPlugin)} {
		if err := os.WriteFile(filepath.Join(tmp, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(thirdPartyPlugin, "\n"); n > 25 {
		t.Fatalf("the third-party plugin has %d lines, the point is that 25 do", n)
	}
	// The module cache has what the SDK's module needs (its tests were
	// built from it), and the plugin needs a subset of it; GOPROXY is the
	// user's, so a module the cache lacks is fetched, not skipped.
	goCmd := func(t *testing.T, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s in the plugin's module: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	goCmd(t, "mod", "tidy")
	bin := filepath.Join(tmp, "agent-worker-backend-hello")
	goCmd(t, "build", "-o", bin, ".")

	// It is a plugin: started by hand, go-plugin refuses without the
	// daemon's handshake.
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "plugin") {
		t.Errorf("the built plugin started by hand: err %v, output %q; want go-plugin's refusal", err, out)
	}

	// What the binary links: the modules `go version -m` lists.
	var linked []string
	for _, line := range strings.Split(string(goCmd(t, "version", "-m", bin)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "dep" {
			linked = append(linked, f[1])
		}
	}
	if !slices.Contains(linked, "github.com/hashicorp/go-plugin") {
		t.Errorf("go version -m lists no go-plugin among %v: the listing is broken", linked)
	}
	for _, m := range linked {
		if m == mainModule {
			t.Errorf("the 25-line plugin links the daemon's module %s: the SDK must not import it", m)
		}
		if why := deniedReason(m, deniedModules); why != "" {
			t.Errorf("the 25-line plugin links %s: %s must not be in a third-party plugin", m, why)
		}
	}
	t.Logf("the plugin links %d modules: %s", len(linked), strings.Join(linked, " "))

	// What the author's go.sum holds after tidy: a module without a line
	// there was not downloaded, not even its go.mod.
	tidySum, err := os.ReadFile(filepath.Join(tmp, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(tidySum), "\n") {
		if m, _, ok := strings.Cut(line, " "); ok && deniedReason(m, deniedModules) != "" {
			t.Errorf("the plugin's go.sum has %q: %s must not be downloaded to build a third-party plugin", line, deniedReason(m, deniedModules))
		}
	}

	t.Run("go mod graph", func(t *testing.T) {
		var inGraph []string
		edges := 0
		for _, line := range strings.Split(string(goCmd(t, "mod", "graph")), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			edges++
			m, _, _ := strings.Cut(f[1], "@")
			if (deniedReason(m, deniedModules) != "" || m == mainModule) && !slices.Contains(inGraph, m) {
				inGraph = append(inGraph, m)
			}
		}
		if edges == 0 {
			t.Fatal("go mod graph of the plugin's module is empty: the listing is broken (it requires the sdk)")
		}
		slices.Sort(inGraph)
		if len(inGraph) > 0 {
			t.Errorf("go mod graph of a plugin built against the sdk module lists %s: the sdk's go.mod (sdk/go.mod) must not require the daemon's module or its dependencies", strings.Join(inGraph, " "))
		}
	})
}
