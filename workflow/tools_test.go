package workflow

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTools(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		agent      string
		want       []string
		wantConfig string
	}{
		"absent is the backend's default": {"{model: anthropic/x}", nil, `{}`},
		"empty is none":                   {"{model: anthropic/x, tools: []}", []string{}, `{"tools":[]}`},
		"some, once each":                 {"{model: anthropic/x, tools: [shell, read, read]}", []string{"shell", "read"}, `{"tools":["shell","read"]}`},
		"all":                             {"{model: anthropic/x, tools: [read, write, list, search, shell]}", WorkspaceTools, `{"tools":["read","write","list","search","shell"]}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte("agents:\n  a: "+tc.agent+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			a := f.Agents[0]
			if diff := cmp.Diff(tc.want, a.Tools); diff != "" || (tc.want == nil) != (a.Tools == nil) {
				t.Errorf("Tools = %#v, want %#v", a.Tools, tc.want)
			}
			b, err := json.Marshal(a.BackendConfig())
			if got := string(b); err != nil || got != tc.wantConfig {
				t.Errorf("BackendConfig as JSON = %s (%v), want %s", got, err, tc.wantConfig)
			}
		})
	}
}

func TestToolsProblems(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ src, want string }{
		"unknown name": {"agents:\n  a:\n    model: anthropic/x\n    tools: [read, browse]\n",
			`wf.yaml:4:19: unknown tool "browse": use some of read, write, list, search, shell, or tools: [] for none`},
		"not a list": {"agents:\n  a: {model: anthropic/x, tools: read}\n", "wf.yaml:2:34: tools must be a list of read, write, list, search, shell"},
		"a CLI backend": {"agents:\n  a: {backend: claude, tools: [read]}\n",
			"wf.yaml:2:31: tools only applies to the sdk backend; the claude CLI brings its own tools"},
		"in config": {"agents:\n  a: {model: anthropic/x, config: {tools: [read]}}\n", `config key "tools" clashes`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
