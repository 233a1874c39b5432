package main

import (
	"github.com/agent-worker/agent-worker/plugins/clis"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
)

// healthyFacts is a machine where everything works: a daemon of this
// version with the mock, the sdk backend and its key, and claude at the
// tested version.
func healthyFacts() doctorFacts {
	return doctorFacts{
		home: "/h", homeMode: 0o700, homeWritable: true,
		daemon: daemonRunning, daemonPID: 7, daemonURL: "http://127.0.0.1:5099", daemonVersion: api.Version,
		storePath: "/h/agent-worker.db", storeBytes: 12e6, storeHealth: &api.StoreHealth{Path: "/h/agent-worker.db", Linked: true},
		plugins: []api.Plugin{
			{Kind: "backend", Name: "mock", Path: "/p/agent-worker-backend-mock"},
			{Kind: "backend", Name: "sdk", Path: "/p/agent-worker-backend-sdk"},
			{Kind: "backend", Name: "claude", Path: "/p/agent-worker-backend-claude", Status: "claude " + testedClaude + " (Claude Code) at /usr/bin/claude"},
		},
		pluginDirs: []string{"/p"},
		envKnown:   true, env: []string{"ANTHROPIC_API_KEY", "PATH"}, shellEnv: []string{"PATH"},
		defaultModel: "anthropic/claude-sonnet-4-5",
		sandbox:      api.SandboxInfo{State: api.SandboxOn, Mode: "auto", Detail: "landlock ABI 7"},
		consoleURL:   "http://127.0.0.1:5099/console/", opener: "xdg-open",
		disk: api.Disk{Path: "/h", FreeBytes: 50 << 30},
	}
}

// Each problem is the status it deserves, with its fix, and decides the
// exit status as doctor's help says.
func TestDiagnose(t *testing.T) {
	t.Parallel()
	type want struct {
		name   string
		status checkStatus
		detail string // a part of it
		fix    string // a part of it
	}
	tests := map[string]struct {
		change   func(*doctorFacts)
		want     want
		ok       bool
		runnable []string
	}{
		"healthy": {
			change:   func(*doctorFacts) {},
			want:     want{"sdk", checkOK, "ANTHROPIC_API_KEY set", ""},
			ok:       true,
			runnable: []string{"mock", "sdk", "claude"},
		},
		"home open to others": {
			change: func(f *doctorFacts) { f.homeMode = 0o755 },
			want:   want{"home", checkWarn, "mode 0755", "chmod 700 /h"},
			ok:     true, runnable: []string{"mock", "sdk", "claude"},
		},
		"no home yet": {
			change: func(f *doctorFacts) { f.homeMissing, f.daemon = true, daemonStopped },
			want:   want{"home", checkOK, "not made yet", ""},
			ok:     true, runnable: []string{"mock", "sdk", "claude"},
		},
		"daemon of another version": {
			change: func(f *doctorFacts) { f.daemonVersion = "v0.0.1" },
			want:   want{"daemon", checkWarn, "version v0.0.1, at http://127.0.0.1:5099; this CLI is " + api.Version, "agent-worker stop --all"},
			ok:     true, runnable: []string{"mock", "sdk", "claude"},
		},
		"daemon silent": {
			change: func(f *doctorFacts) { f.daemon, f.daemonErr = daemonSilent, "timeout" },
			want:   want{"daemon", checkFail, "pid 7 at http://127.0.0.1:5099 does not answer: timeout", "agent-worker stop --all (or kill 7)"},
			ok:     false, runnable: []string{"mock", "sdk", "claude"},
		},
		"no mock": {
			change: func(f *doctorFacts) { f.plugins = f.plugins[1:] },
			want:   want{"mock", checkFail, "agent-worker-backend-mock is not installed (searched /p)", "go install " + api.Module + "/cmd/agent-worker-backend-mock@"},
			ok:     false, runnable: []string{"sdk", "claude"},
		},
		"broken mock": {
			change: func(f *doctorFacts) { f.plugins[0].Error = "not executable" },
			want:   want{"mock", checkFail, "is broken: not executable", "go install"},
			ok:     false, runnable: []string{"sdk", "claude"},
		},
		"no key and no CLI": {
			change: func(f *doctorFacts) {
				f.env = []string{"PATH"}
				f.plugins[2].Status = "missing: npm install -g @anthropic-ai/claude-code"
			},
			want: want{"sdk", checkWarn, "ANTHROPIC_API_KEY not set, nor any other model service's key", "export ANTHROPIC_API_KEY=… then agent-worker stop --all"},
			ok:   true, runnable: []string{"mock"},
		},
		"key only in this shell": {
			change: func(f *doctorFacts) { f.env, f.shellEnv = []string{"PATH"}, []string{"ANTHROPIC_API_KEY", "PATH"} },
			want:   want{"sdk", checkWarn, "set in this shell, but the daemon started without it", "agent-worker stop --all"},
			ok:     true, runnable: []string{"mock"},
		},
		"no daemon, no key": {
			change: func(f *doctorFacts) { f.daemon, f.storeHealth, f.env = daemonStopped, nil, nil },
			want:   want{"sdk", checkWarn, "ANTHROPIC_API_KEY not set", "export ANTHROPIC_API_KEY=…"},
			ok:     true, runnable: []string{"mock"},
		},
		"another service's key": {
			change: func(f *doctorFacts) { f.env = []string{"OPENAI_API_KEY"} },
			want:   want{"sdk", checkWarn, "OPENAI_API_KEY set: give sdk agents a --model of that service", "export ANTHROPIC_API_KEY"},
			ok:     true, runnable: []string{"mock", "sdk"},
		},
		"claude missing": {
			change: func(f *doctorFacts) { f.plugins[2].Status = "missing: npm install -g @anthropic-ai/claude-code" },
			want:   want{"claude", checkWarn, "claude is not on the daemon's PATH", "npm install -g @anthropic-ai/claude-code@" + testedClaude},
			ok:     true, runnable: []string{"mock", "sdk"},
		},
		"claude untested": {
			change: func(f *doctorFacts) { f.plugins[2].Status = "claude 1.0.3 (Claude Code) at /usr/bin/claude" },
			want:   want{"claude", checkWarn, "not the version we test (" + testedClaude + ")", "@anthropic-ai/claude-code@" + testedClaude},
			ok:     true, runnable: []string{"mock", "sdk", "claude"},
		},
		"gemini preset at the tested version": {
			change: func(f *doctorFacts) {
				f.env = append(f.env, "GEMINI_API_KEY")
				f.plugins = append(f.plugins, api.Plugin{Kind: "backend", Name: "gemini", Path: "/p/agent-worker-backend-gemini", Status: "gemini " + clis.Gemini.Tested + " at /usr/bin/gemini"})
			},
			want: want{"gemini", checkOK, "gemini " + clis.Gemini.Tested + " at /usr/bin/gemini; GEMINI_API_KEY set", ""},
			ok:   true, runnable: []string{"mock", "sdk", "claude", "gemini"},
		},
		"claude-acp preset untested": {
			change: func(f *doctorFacts) {
				f.plugins = append(f.plugins, api.Plugin{Kind: "backend", Name: "claude-acp", Path: "/p/agent-worker-backend-claude-acp", Status: "claude-agent-acp 0.9.0 at /usr/bin/claude-agent-acp"})
			},
			want: want{"claude-acp", checkWarn, "not the version we test (" + clis.ClaudeACP.Tested + ")", clis.ClaudeACP.Install},
			ok:   true, runnable: []string{"mock", "sdk", "claude", "claude-acp"},
		},
		"opencode preset without its CLI": {
			change: func(f *doctorFacts) {
				f.plugins = append(f.plugins, api.Plugin{Kind: "backend", Name: "opencode", Path: "/p/agent-worker-backend-opencode", Status: "missing: " + clis.OpenCode.Install})
			},
			want: want{"opencode", checkOK, "opencode is not on the daemon's PATH (optional: npm install -g opencode-ai to use backend opencode)", ""},
			ok:   true, runnable: []string{"mock", "sdk", "claude"},
		},
		"claude sandboxed without a key": {
			change: func(f *doctorFacts) { f.env = []string{"OPENAI_API_KEY"} },
			want:   want{"claude", checkWarn, "sandboxed runs cannot see a `claude` login", "export ANTHROPIC_API_KEY"},
			ok:     true, runnable: []string{"mock", "sdk"},
		},
		"sandbox required where there is none": {
			change: func(f *doctorFacts) {
				f.sandbox = api.SandboxInfo{State: api.SandboxUnavailable, Mode: "required", Detail: "no Landlock; runs are refused (--sandbox required)"}
			},
			want: want{"sandbox", checkFail, "runs are refused", "--sandbox auto"},
			ok:   false, runnable: []string{"mock", "sdk", "claude"},
		},
		"store damaged": {
			change: func(f *doctorFacts) {
				now := time.Now()
				f.storeHealth.CorruptSince, f.storeHealth.Corrupt = &now, "malformed"
			},
			want: want{"store", checkFail, "is damaged: malformed", "agent-worker backup --help"},
			ok:   false, runnable: []string{"mock", "sdk", "claude"},
		},
		"postgres not migrated": {
			change: func(f *doctorFacts) {
				f.daemon, f.storeHealth, f.storePath, f.storePending = daemonStopped, nil, "postgres://u:xxxxx@db/aw", 3
			},
			want: want{"store", checkWarn, "reachable; 3 migrations not applied yet", "agent-worker daemon --store"},
			ok:   true, runnable: []string{"mock", "sdk", "claude"},
		},
		"little disk": {
			change: func(f *doctorFacts) { f.disk.FreeBytes = 300 << 20 },
			want:   want{"disk", checkWarn, "314.6 MB free at /h", "free space there"},
			ok:     true, runnable: []string{"mock", "sdk", "claude"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := healthyFacts()
			f.plugins = slices.Clone(f.plugins)
			tt.change(&f)
			r := diagnose(f, false)
			if r.OK != tt.ok {
				t.Errorf("ok = %v, want %v (%s)", r.OK, tt.ok, r.summary())
			}
			// --strict also wants a backend beside the mock.
			if strict, want := diagnose(f, true), tt.ok && len(tt.runnable) > 1; strict.OK != want {
				t.Errorf("--strict: ok = %v, want %v (%s)", strict.OK, want, strict.summary())
			}
			if diff := cmp.Diff(tt.runnable, r.Runnable); diff != "" {
				t.Errorf("runnable (-want +got):\n%s", diff)
			}
			i := slices.IndexFunc(r.Checks, func(c check) bool { return c.Name == tt.want.name })
			if i < 0 {
				t.Fatalf("no %s check in %+v", tt.want.name, r.Checks)
			}
			c := r.Checks[i]
			if c.Status != tt.want.status || !strings.Contains(c.Detail, tt.want.detail) || !strings.Contains(c.Fix, tt.want.fix) {
				t.Errorf("%s = %+v, want %s with %q and fix %q", c.Name, c, tt.want.status, tt.want.detail, tt.want.fix)
			}
			for _, c := range r.Checks {
				if c.Status != checkOK && c.Fix == "" {
					t.Errorf("%s is %s without a fix: %+v", c.Name, c.Status, c)
				}
			}
		})
	}
}

// The summary line says what a user can do now: a machine where only the
// mock runs is ready for mock-backed teams (what getting-started runs
// first), unless --strict asks for a real backend (issue 41, item 7).
func TestDoctorSummary(t *testing.T) {
	t.Parallel()
	mockOnly := func(f *doctorFacts) {
		f.env = []string{"PATH"}
		f.plugins[2].Status = "missing: npm install -g @anthropic-ai/claude-code"
	}
	tests := map[string]struct {
		change func(*doctorFacts)
		strict bool
		want   string
	}{
		"mock only":           {mockOnly, false, "doctor: ready for mock-backed teams: no backend but the mock can run: a real backend needs an API key or an agent CLI (see the warnings above); 4 warnings, 0 failures"},
		"mock only, --strict": {mockOnly, true, "doctor: not ready (--strict): no backend but the mock can run: a real backend needs an API key or an agent CLI (see the warnings above); 4 warnings, 0 failures"},
		"real backends":       {func(*doctorFacts) {}, true, "doctor: ok: mock, sdk, claude can run; 2 warnings, 0 failures"},
		"no mock":             {func(f *doctorFacts) { f.plugins = f.plugins[1:] }, false, "doctor: not ready: the mock backend cannot run; 2 warnings, 1 failure"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := healthyFacts()
			f.plugins = slices.Clone(f.plugins)
			tt.change(&f)
			if got := diagnose(f, tt.strict).summary(); got != tt.want {
				t.Errorf("summary = %q\nwant      %q", got, tt.want)
			}
		})
	}
}

// The versions doctor calls tested are those the Makefile installs for
// the end-to-end tests.
func TestDoctorTestedVersionsMatchMakefile(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"CLAUDE_CODE_VERSION": testedClaude, "CODEX_VERSION": testedCodex,
		"GEMINI_CLI_VERSION": clis.Gemini.Tested, "CLAUDE_ACP_VERSION": clis.ClaudeACP.Tested, "CODEX_ACP_VERSION": clis.CodexACP.Tested} {
		m := regexp.MustCompile(`(?m)^` + name + `\s*:?=\s*(\S+)`).FindSubmatch(mk)
		if m == nil || string(m[1]) != want {
			t.Errorf("Makefile %s = %q, doctor tests against %s: keep them equal", name, m, want)
		}
	}
}
