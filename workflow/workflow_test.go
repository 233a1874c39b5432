package workflow

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.golden from the current output")

// TestGolden loads testdata/<case>/workflow.yaml and compares either its
// problems or its instance, resolved with fixed variables, to want.golden.
// An optional args file holds the params given after `--`, an optional
// backends file the installed backends (checked as the daemon does).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*/workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			got := goldenOutput(t, dir)
			path := filepath.Join(dir, "want.golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./workflow -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
			}
		})
	}
}

func goldenOutput(t *testing.T, dir string) string {
	var opts []ParseOption
	if b, err := os.ReadFile(filepath.Join(dir, "backends")); err == nil {
		opts = append(opts, WithBackends(installedBackends(strings.Fields(string(b)))))
	}
	f, err := Load(filepath.Join(dir, "workflow.yaml"), opts...)
	if err != nil {
		var ps Problems
		if !errors.As(err, &ps) {
			t.Fatalf("Load returned %T, want Problems: %v", err, err)
		}
		return err.Error() + "\n"
	}
	var args []string
	if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
		args = strings.Fields(string(b))
	}
	params, err := f.ParseParams(args)
	if err != nil {
		t.Fatal(err)
	}
	setup := map[string]string{}
	for _, st := range f.Setup {
		setup[st.As] = "<" + st.As + ">"
	}
	env := func(name string) (string, bool) { return "<env " + name + ">", true }
	in, err := Resolve(f, Vars{Tag: "pr-42", Params: params, Setup: setup, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), abs, "$DIR")
}

// installedBackends checks a backend word the way the daemon's catalog
// does (host/agents.ResolveBackend), for a daemon with these installed.
func installedBackends(installed []string) func(string) error {
	return func(word string) error {
		name := BackendName(word)
		switch {
		case name == External || slices.Contains(installed, name):
			return nil
		case slices.Contains(Backends, name):
			return fmt.Errorf("backend %q is not installed", name)
		case Closest(name, installed) != "":
			return fmt.Errorf("unknown backend %q: did you mean %q?", word, Closest(name, installed))
		}
		return fmt.Errorf("unknown backend %q: use one of %s", word, strings.Join(installed, ", "))
	}
}
