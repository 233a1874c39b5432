package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// Every form ParseSchedule accepts, and where it fires next from a
// Saturday morning; the same Schedule is what the daemon fires from.
func TestSchedule(t *testing.T) {
	t.Parallel()
	sat := time.Date(2026, 11, 21, 8, 0, 0, 0, time.Local) // a Saturday
	sun9 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.Local)
	tests := map[string]struct {
		schedule string
		next     time.Time
	}{
		"interval":          {"30s", sat.Add(30 * time.Second)},
		"hours":             {"1h30m", sat.Add(90 * time.Minute)},
		"every":             {"@every 5m", sat.Add(5 * time.Minute)},
		"spaces":            {"  10m ", sat.Add(10 * time.Minute)},
		"every minute":      {"* * * * *", sat.Add(time.Minute)},
		"steps":             {"0-30/10 0-20/5 * * *", time.Date(2026, 11, 21, 10, 0, 0, 0, time.Local)},
		"names":             {"0 9 * JAN-dec MON,wed,FRI", time.Date(2026, 11, 23, 9, 0, 0, 0, time.Local)},
		"hourly":            {"@hourly", sat.Add(time.Hour)},
		"daily":             {"@daily", time.Date(2026, 11, 22, 0, 0, 0, 0, time.Local)},
		"midnight":          {"@midnight", time.Date(2026, 11, 22, 0, 0, 0, 0, time.Local)},
		"weekly":            {"@weekly", time.Date(2026, 11, 22, 0, 0, 0, 0, time.Local)},
		"monthly":           {"@monthly", time.Date(2026, 12, 1, 0, 0, 0, 0, time.Local)},
		"sunday as 0":       {"0 9 * * 0", sun9},
		"sunday as 7":       {"0 9 * * 7", sun9},
		"sunday as SUN":     {"0 9 * * sun", sun9},
		"range up to 7":     {"0 9 * * 1-7", sat.Add(time.Hour)},
		"range to 7 skips":  {"0 7 * * 1-7/2", time.Date(2026, 11, 22, 7, 0, 0, 0, time.Local)}, // 1,3,5,7: Sunday next
		"list with 7":       {"0 7 * * 3,7", time.Date(2026, 11, 22, 7, 0, 0, 0, time.Local)},
		"friday to sunday":  {"0 7 * * FRI-7", time.Date(2026, 11, 22, 7, 0, 0, 0, time.Local)},
		"day of month 1,15": {"0 0 1,15 * *", time.Date(2026, 12, 1, 0, 0, 0, 0, time.Local)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatalf("ParseSchedule(%q): %v", tc.schedule, err)
			}
			if got := s.Next(sat); !got.Equal(tc.next) {
				t.Errorf("ParseSchedule(%q).Next(Saturday 08:00) = %s, want %s", tc.schedule, got.Format(time.RFC1123), tc.next.Format(time.RFC1123))
			}
		})
	}
}

func TestScheduleRefused(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ schedule, wantErr string }{
		"empty":          {"", "is empty"},
		"too short":      {"500ms", `"500ms" is shorter than 1s: use at least 1s`},
		"zero":           {"0s", "is shorter than 1s"},
		"every too fast": {"@every 10ms", "is shorter than 1s"},
		"every garbage":  {"@every often", `"often" is not a duration`},
		"bad duration":   {"5x", `"5x" is neither an interval nor a cron expression: use an interval (30s`},
		"four fields":    {"* * * *", "has 4 fields, a cron expression has 5"},
		"six fields":     {"0 * * * * *", "has 6 fields, a cron expression has 5"},
		"word":           {"daily", `"daily" is neither an interval nor a cron expression`},
		"garbage":        {"every tuesday", "has 2 fields"},
		"descriptor":     {"@fortnightly", `"@fortnightly" is not a known descriptor: use an interval`},
		"time zone":      {"TZ=UTC 0 9 * * *", "schedules run in the daemon's local time, drop the TZ= prefix"},
		"out of range":   {"0 24 * * *", `hour field "24" is out of range: use *, numbers 0-23`},
		"minute 61":      {"61 * * * *", `minute field "61" is out of range: use *, numbers 0-59, ranges (a-b), lists (a,b) and steps (/n)`},
		"day zero":       {"0 0 0 * *", `day-of-month field "0" is out of range`},
		"day of week 8":  {"0 0 * * 8", `day-of-week field "8" is out of range: use *, numbers 0-7 (0 and 7 are Sunday) or names SUN-SAT`},
		"bad name":       {"0 0 * * MOO", `day-of-week field "MOO" is not valid`},
		"zero step":      {"*/0 * * * *", `minute field "*/0" has a step that is not a whole number above 0`},
		"backward range": {"30-10 * * * *", `minute field "30-10" runs backwards: write the smaller value first`},
		"not a number":   {"abc * * * *", `minute field "abc" is not valid`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSchedule(tc.schedule)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSchedule(%q) = %v, want an error containing %q", tc.schedule, err, tc.wantErr)
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

// loop_guard: the default, a number, 0 for off, and what a mistake says.
func TestLoopGuard(t *testing.T) {
	t.Parallel()
	for yml, want := range map[string]int{
		"":                              DefaultLoopGuard,
		"loop_guard: {max_rounds: 5}\n": 5,
		"loop_guard: {max_rounds: 0}\n": 0,
		"loop_guard: {}\n":              DefaultLoopGuard,
	} {
		f, err := Parse("wf.yaml", []byte("agents:\n  a: {backend: mock}\n"+yml))
		if err != nil || f.LoopGuard != want {
			t.Errorf("%q: LoopGuard = %v (%v), want %d", yml, f, err, want)
		}
	}
	for yml, want := range map[string]string{
		"loop_guard: 5\n":                  "wf.yaml:3:13: loop_guard must be a map",
		"loop_guard: {max_rounds: -1}\n":   "wf.yaml:3:26: max_rounds must be a whole number, 0 or more",
		"loop_guard: {max_rounds: lots}\n": "wf.yaml:3:26: max_rounds must be a whole number",
		"loop_guard: {max_round: 3}\n":     `wf.yaml:3:14: unknown key "max_round" in loop_guard`,
	} {
		_, err := Parse("wf.yaml", []byte("agents:\n  a: {backend: mock}\n"+yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
}

// budget: per workflow and per agent, with what a mistake says.
func TestBudget(t *testing.T) {
	t.Parallel()
	f, err := Parse("wf.yaml", []byte("budget: {usd: 2.5, runs: 3, hard: true}\nagents:\n  a: {backend: mock, budget: {tokens: 1000}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b := f.Budget; b == nil || *b.USD != 2.5 || *b.Runs != 3 || b.Tokens != nil || !b.Hard {
		t.Errorf("workflow budget = %+v", b)
	}
	if b := f.Agents[0].Budget; b == nil || *b.Tokens != 1000 || b.Runs != nil || b.Hard {
		t.Errorf("agent budget = %+v", b)
	}
	for yml, want := range map[string]string{
		"budget: {usd: -1}\nagents: {a: {backend: mock}}\n":    "wf.yaml:1:15: budget usd must be a number of dollars, 0 or more",
		"budget: {runs: many}\nagents: {a: {backend: mock}}\n": "wf.yaml:1:16: budget runs must be a whole number, 0 or more",
		"budget: {}\nagents: {a: {backend: mock}}\n":           "wf.yaml:1:9: budget sets no limit",
		"agents: {a: {backend: mock, budget: {tokens: -5}}}\n": "wf.yaml:1:46: agent a budget tokens must be a whole number",
		"budget: {dollars: 3}\nagents: {a: {backend: mock}}\n": `unknown key "dollars" in budget`,
	} {
		if _, err := Parse("wf.yaml", []byte(yml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
}
