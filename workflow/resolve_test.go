package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parse builds a workflow around kickoff, with a setup step setting name and
// a param file, as the anchor's interpolation cases assume.
func parse(t *testing.T, kickoff string) *File {
	t.Helper()
	src := "name: wf\nagents: {a: {backend: mock}}\nparams: [{name: file}]\nsetup: [{shell: echo, as: name}]\nkickoff: |\n  " + kickoff + "\n"
	f, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestResolveKickoff(t *testing.T) {
	t.Parallel()
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"X": "from-vars"}[k]
		return v, ok
	}
	tests := map[string]struct {
		kickoff string
		vars    Vars
		want    string // with $DIR for the file's directory
		wantErr string
	}{
		"setup variable":          {kickoff: "Hello ${{ name }}", vars: Vars{Setup: map[string]string{"name": "world"}}, want: "Hello world"},
		"no spaces":               {kickoff: "Hello ${{name}}", vars: Vars{Setup: map[string]string{"name": "world"}}, want: "Hello world"},
		"extra spaces":            {kickoff: "Hello ${{  name  }}", vars: Vars{Setup: map[string]string{"name": "world"}}, want: "Hello world"},
		"env from vars":           {kickoff: "${{ env.X }}", vars: Vars{Env: env}, want: "from-vars"},
		"env falls back":          {kickoff: "${{ env.PATH }}", vars: Vars{Env: env}, want: os.Getenv("PATH")},
		"env from process":        {kickoff: "${{ env.PATH }}", want: os.Getenv("PATH")},
		"env missing":             {kickoff: "${{ env.AW_TEST_NOT_SET_ANYWHERE }}", vars: Vars{Env: env}, wantErr: "environment variable AW_TEST_NOT_SET_ANYWHERE is not set"},
		"workflow name and tag":   {kickoff: "${{ workflow.name }}:${{ workflow.tag }}", vars: Vars{Tag: "pr-42"}, want: "wf:pr-42"},
		"default tag":             {kickoff: "${{ workflow.tag }}", want: "main"},
		"instance name overrides": {kickoff: "${{ workflow.name }}", vars: Vars{Workflow: "other"}, want: "other"},
		"source dir and param":    {kickoff: "${{ source.dir }}/${{ params.file }}", vars: Vars{Params: map[string]string{"file": "config.yml"}}, want: "$DIR/config.yml"},
		"absent param is empty":   {kickoff: "[${{ params.file }}]", want: "[]"},
		"setup not run":           {kickoff: "${{ name }}", wantErr: "setup variable name has no value"},
		"values not re-expanded":  {kickoff: "${{ name }}", vars: Vars{Setup: map[string]string{"name": "${{ env.X }}"}}, want: "${{ env.X }}"},
		"no variables":            {kickoff: "plain {{ text }}", want: "plain {{ text }}"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := parse(t, tc.kickoff)
			in, err := Resolve(f, tc.vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(tc.want, "$DIR", f.Dir) + "\n"; in.Kickoff != want {
				t.Errorf("kickoff = %q, want %q", in.Kickoff, want)
			}
		})
	}
}

// TestUnknownVariables: where the anchor left unknown variables as written,
// we reject them at load time, placed at the variable itself.
func TestUnknownVariables(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		want string
	}{
		"workflow field":     {"kickoff: ${{ workflow.unknown }}", "wf.yaml:3:10: unknown variable ${{ workflow.unknown }}: use workflow.name or workflow.tag"},
		"source field":       {"kickoff: 'at ${{ source.unknown }}'", "wf.yaml:3:14: unknown variable ${{ source.unknown }}: use source.dir"},
		"undeclared param":   {"kickoff: \"${{ params.missing }}\"", "wf.yaml:3:11: unknown variable ${{ params.missing }}: declare it under params:"},
		"unknown name":       {"kickoff: |\n  ok\n    ${{ nope }}", "wf.yaml:5:5: unknown variable ${{ nope }}: no setup step has as: nope"},
		"nested expression":  {"kickoff: ${{ env.A.B }}", "wf.yaml:3:10: unknown variable ${{ env.A.B }}"},
		"later setup step":   {"setup: [{shell: 'echo ${{ b }}', as: a}, {shell: echo, as: b}]", "wf.yaml:3:23: ${{ b }} is set by setup step 2, which runs later: move that step first"},
		"own setup step":     {"setup: [{shell: 'echo ${{ a }}', as: a}]", "wf.yaml:3:23: ${{ a }} is set by setup step 1, which runs later"},
		"unterminated":       {"kickoff: 'x ${{ env.A'", "wf.yaml:3:13: unterminated ${{: close it with }}"},
		"wakeup prompt":      {"agents: {b: {backend: mock, schedule: 1m, wakeup_prompt: '${{ x }}'}}", "wf.yaml:3:59: unknown variable ${{ x }}"},
		"mcp command":        {"agents: {b: {backend: mock, mcp_servers: {s: {command: [run, '${{ y }}']}}}}", "wf.yaml:3:63: unknown variable ${{ y }}"},
		"docs dir":           {"context: {documents: {provider: file, dir: '${{ workflow.nam }}'}}", "wf.yaml:3:45: unknown variable ${{ workflow.nam }}"},
		"config passes raw":  {"agents: {b: {backend: mock, config: {script: [{reply: '${{ x }}'}]}}}\nkickoff: ${{ y }}", "wf.yaml:4:10: unknown variable ${{ y }}"},
		"suggests setup var": {"setup: [{shell: echo, as: commit}]\nkickoff: ${{ comit }}", "wf.yaml:4:10: unknown variable ${{ comit }}: did you mean commit?"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := "name: wf\nagents: {a: {backend: mock}}\n" + tc.src + "\n"
			if strings.HasPrefix(tc.src, "agents:") {
				src = "name: wf\n\n" + tc.src + "\n"
			}
			_, err := Parse("wf.yaml", []byte(src))
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Parse error = %v, want Problems", err)
			}
			if len(ps) != 1 || !strings.HasPrefix(ps.Error(), tc.want) {
				t.Errorf("problems:\n%v\nwant one starting %q", err, tc.want)
			}
		})
	}
}
