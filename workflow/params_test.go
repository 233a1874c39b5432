package workflow

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseParams(t *testing.T) {
	t.Parallel()
	f := &File{Params: []Param{
		{Name: "pr", Type: "string", Short: "p"},
		{Name: "depth", Type: "number", Default: "2"},
		{Name: "verbose", Type: "boolean"},
		{Name: "mode", Type: "string", Default: "fast"},
	}}
	required := &File{Params: []Param{{Name: "pr", Type: "string", Required: true}, {Name: "repo", Type: "string", Required: true}}}
	tests := map[string]struct {
		f       *File
		args    []string
		want    map[string]string
		wantErr string
	}{
		"number":            {f: f, args: []string{"--depth", "3"}, want: map[string]string{"pr": "", "depth": "3", "verbose": "", "mode": "fast"}},
		"boolean flag":      {f: f, args: []string{"--verbose"}, want: map[string]string{"pr": "", "depth": "2", "verbose": "true", "mode": "fast"}},
		"boolean value":     {f: f, args: []string{"--verbose=no"}, wantErr: `--verbose: "no" must be true or false`},
		"defaults":          {f: f, want: map[string]string{"pr": "", "depth": "2", "verbose": "", "mode": "fast"}},
		"override default":  {f: f, args: []string{"--mode=slow", "--depth=-1.5"}, want: map[string]string{"pr": "", "depth": "-1.5", "verbose": "", "mode": "slow"}},
		"short":             {f: f, args: []string{"-p", "42"}, want: map[string]string{"pr": "42", "depth": "2", "verbose": "", "mode": "fast"}},
		"value like a flag": {f: f, args: []string{"--pr", "--depth"}, want: map[string]string{"pr": "--depth", "depth": "2", "verbose": "", "mode": "fast"}},
		"missing required":  {f: required, args: []string{"--repo", "x"}, wantErr: "missing required parameter(s): pr (use --pr VALUE)"},
		"missing both":      {f: required, wantErr: "missing required parameter(s): pr, repo (use --pr VALUE --repo VALUE)"},
		"not a number":      {f: f, args: []string{"--depth", "abc"}, wantErr: `--depth: "abc" must be a number`},
		"unknown flag":      {f: f, args: []string{"--dpeth", "3"}, wantErr: "unknown parameter --dpeth: this workflow takes --pr/-p STRING, --depth NUMBER, --verbose, --mode STRING"},
		"no params":         {f: &File{}, args: []string{"-x"}, wantErr: "unknown parameter -x: this workflow takes no parameters"},
		"positional":        {f: f, args: []string{"42"}, wantErr: `unexpected argument "42": give params as --name value`},
		"no value":          {f: f, args: []string{"--pr"}, wantErr: "--pr needs a value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.f.ParseParams(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}
