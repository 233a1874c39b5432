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

// A plugin author's module: the plugin above, requiring the SDK of this
// checkout (replace), built offline from the module cache. What it links
// must hold none of the denied modules. What `go mod graph` lists is
// checked strictly once sdk/ is a module of its own; until then the
// subtest skips and logs what it measured (docs/architecture.md,
// "the SDK's module").
func TestThirdPartyPluginBuildsAgainstTheSDKAlone(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sdkModule := fileExists(filepath.Join(root, "sdk", "go.mod"))
	req, dir := module, root
	if sdkModule {
		req, dir = module+"/sdk", filepath.Join(root, "sdk")
	}
	tmp := t.TempDir()
	gomod := "module example.com/hello\n\ngo 1.26.8\n\nrequire " + req + " v0.0.0\n\nreplace " + req + " => " + dir + "\n"
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
	// Offline: the module cache has what the main module needs, and the
	// plugin needs a subset of it.
	goCmd := func(t *testing.T, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil && strings.Contains(stderr.String(), "module lookup disabled by GOPROXY=off") {
			t.Skipf("go %s in the plugin's module needs a module the cache lacks (run go mod download in the repository): %s", strings.Join(args, " "), stderr.String())
		}
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
		for _, line := range strings.Split(string(goCmd(t, "mod", "graph")), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			m, _, _ := strings.Cut(f[1], "@")
			if deniedReason(m, deniedModules) != "" && !slices.Contains(inGraph, m) {
				inGraph = append(inGraph, m)
			}
		}
		slices.Sort(inGraph)
		if !sdkModule {
			t.Skipf("sdk/ is part of the main module (no sdk/go.mod), so a plugin's module graph lists every requirement of the daemon's go.mod (graph pruning keeps a dependency's direct requirements); denied modules listed today, none of them linked or in the plugin's go.sum: %s", strings.Join(inGraph, " "))
		}
		if len(inGraph) > 0 {
			t.Errorf("go mod graph of a plugin built against the sdk module lists %s: the sdk's go.mod must not require the daemon's modules", strings.Join(inGraph, " "))
		}
	})
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
