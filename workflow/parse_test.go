package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotAMapping(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{"empty": "", "null": "null\n", "string": "hello\n", "number": "42\n", "list": "- a\n", "comment only": "# nothing\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(src))
			want := "wf.yaml:1:1: workflow file must be a mapping with an agents: key"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %v, want %q", err, want)
			}
		})
	}
}

func TestLoadNotFound(t *testing.T) {
	t.Parallel()
	_, err := Load("testdata/nowhere.yaml")
	if want := "workflow file testdata/nowhere.yaml not found"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	const agents = "agents: {a: {backend: mock}}\n"
	tests := map[string]struct {
		path, src, want, wantErr string
	}{
		"from .yaml":     {path: "dir/review.yaml", src: agents, want: "review"},
		"from .yml":      {path: "review.v2.yml", src: agents, want: "review.v2"},
		"given":          {path: "x.yaml", src: "name: pr-review\n" + agents, want: "pr-review"},
		"bad file name":  {path: "my review.yaml", src: agents, wantErr: `my review.yaml:1:1: workflow name "my review" is not valid`},
		"no file":        {src: "name: inline\n" + agents, want: "inline"},
		"no file, name?": {src: agents, wantErr: "<workflow>:1:1: workflow has no name and no file to take it from: add name:"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(tc.path, []byte(tc.src))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != tc.want {
				t.Errorf("name = %q, want %q", f.Name, tc.want)
			}
		})
	}
}

// TestNoFile: content without a file takes relative paths from the current
// directory.
func TestNoFile(t *testing.T) {
	t.Parallel()
	f, err := Parse("", []byte("name: x\nagents: {a: {backend: mock}}\ncontext: {documents: {provider: file, dir: .team}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if f.Path != "" || f.Dir != wd || f.Context.DocsDir != filepath.Join(wd, ".team") || f.Context.Documents != "file" {
		t.Errorf("Path %q, Dir %q, Context %+v; want no path and %s", f.Path, f.Dir, f.Context, wd)
	}
}

func TestProblemsAs(t *testing.T) {
	t.Parallel()
	_, err := Parse("wf.yaml", []byte("agents:\n  a: {backend: mock, max_steps: 0}\n  b: {backend: Bad!}\n"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 2 {
		t.Fatalf("error = %v, want 2 Problems", err)
	}
	if p := ps[1]; p.File != "wf.yaml" || p.Line != 3 || p.Col != 16 || !strings.Contains(p.Msg, `backend "Bad!" is not valid`) {
		t.Errorf("second problem = %+v", p)
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ schedule, wantErr string }{
		"interval":       {"30s", ""},
		"hours":          {"1h30m", ""},
		"every minute":   {"* * * * *", ""},
		"steps":          {"0-30/10 0-20/5 * * *", ""},
		"names":          {"0 9 * JAN-jun MON,wed,FRI", ""},
		"sunday as 7":    {"0 0 1,15 * 7", ""},
		"too short":      {"500ms", "is shorter than 1s"},
		"zero":           {"0s", "is shorter than 1s"},
		"four fields":    {"* * * *", "nor a 5-field cron"},
		"six fields":     {"0 * * * * *", "nor a 5-field cron"},
		"word":           {"daily", "nor a 5-field cron"},
		"out of range":   {"0 24 * * *", `hour field: "24" is not valid: use *, numbers 0-23`},
		"day zero":       {"0 0 0 * *", "day-of-month field"},
		"bad name":       {"0 0 * * MOO", "or names SUN-SAT"},
		"zero step":      {"*/0 * * * *", `minute field: step "0" must be a whole number above 0`},
		"backward range": {"30-10 * * * *", "runs backwards"},
		"not a number":   {"abc * * * *", `minute field: "abc" is not valid`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := checkSchedule(tc.schedule)
			if tc.wantErr == "" && got != "" || !strings.Contains(got, tc.wantErr) {
				t.Errorf("checkSchedule(%q) = %q, want %q", tc.schedule, got, tc.wantErr)
			}
		})
	}
}

// TestMessages covers problems the all_errors golden file does not.
func TestMessages(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ src, want string }{
		"duplicate agent":      {"agents:\n  a: {backend: mock}\n  a: {backend: mock}\n", `3:3: duplicate key "a" in agents (first at line 2): remove one`},
		"unknown top key":      {"agents: {a: {backend: mock}}\nfoo: 1\n", `2:1: unknown key "foo" at the top level: known keys are name, agents, context, params, setup, kickoff`},
		"agent not a map":      {"agents: {a: mock}\n", "1:13: agent a must be a map of its settings, e.g. a: {backend: mock}"},
		"null agents":          {"agents:\n", "agents is empty"},
		"reserved any case":    {"agents: {System: {backend: mock}}\n", `agent name "System" is reserved`},
		"wakeup and schedule":  {"agents: {a: {backend: mock, schedule: 1m, wakeup: 2m}}\n", "wakeup is the old name of schedule: keep only schedule:"},
		"url with env":         {"agents: {a: {backend: mock, mcp_servers: {s: {url: 'https://x', env: {A: b}}}}}\n", "env only applies to command servers"},
		"command with headers": {"agents: {a: {backend: mock, mcp_servers: {s: {command: x, headers: {A: b}}}}}\n", "headers only apply to url servers"},
		"bad url":              {"agents: {a: {backend: mock, mcp_servers: {s: {url: ftp://x}}}}\n", `url "ftp://x" must start with http:// or https://`},
		"provider no name":     {"agents: {a: {backend: mock, provider: {base_url: 'https://x'}}}\n", "provider needs a name"},
		"config not a map":     {"agents: {a: {backend: mock, config: [1]}}\n", "config must be a map"},
		"config bad keys":      {"agents: {a: {backend: mock, config: {x: {1: a}}}}\n", "config cannot be passed to the backend as JSON"},
		"docs provider":        {"agents: {a: {backend: mock}}\ncontext: {documents: S3}\n", `documents provider "S3" is not valid`},
		"context false":        {"agents: {a: {backend: mock}}\ncontext: false\n", "context must be a map"},
		"boolean default":      {"agents: {a: {backend: mock}}\nparams: [{name: v, type: boolean, default: maybe}]\n", `default "maybe" must be true or false`},
		"params not a list":    {"agents: {a: {backend: mock}}\nparams: {name: v}\n", "params must be a list"},
		"setup bad as":         {"agents: {a: {backend: mock}}\nsetup: [{shell: x, as: my-var}]\n", `as: "my-var" must be a name of letters, digits and _`},
		"prompt file in file":  {"agents: {a: {backend: mock, system_prompt: prompts/x.md}}\n", "system_prompt file prompts/x.md not found next to the workflow file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
