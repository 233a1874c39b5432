package main

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// doctorJSON runs `doctor --json` and parses what it prints.
func (c *cli) doctorJSON() (doctorReport, result) {
	c.t.Helper()
	r := c.run("doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		c.t.Fatalf("doctor --json printed no JSON (%v):\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return rep, r
}

// find is the check of name in rep.
func (rep doctorReport) find(t *testing.T, name string) check {
	t.Helper()
	i := slices.IndexFunc(rep.Checks, func(c check) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("doctor --json has no %s check: %+v", name, rep.Checks)
	}
	return rep.Checks[i]
}

// wantLine fails unless out has a line matching re.
func wantLine(t *testing.T, out, re string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)` + re).MatchString(out) {
		t.Errorf("doctor printed no line matching %q:\n%s", re, out)
	}
}

// Doctor without a daemon checks this machine as a daemon started from
// here would see it, and starts none; with one it asks the daemon, whose
// environment decides the API keys, and never shows a key's value.
func TestDoctor(t *testing.T) {
	c := newCLI(t)
	// No agent CLI on PATH, whatever this machine has: then only the sdk
	// backend's key decides whether a backend beside the mock can run.
	env := slices.DeleteFunc(c.env(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	c.fixedEnv = append(env, "PATH="+t.TempDir())
	const secret = "sk-ant-doctor-e2e-not-a-real-key-7f3a"

	// No daemon, no key: the mock is ok, the key a warning with its fix:
	// ready for mock-backed teams (exit 0), but not for --strict (exit 1).
	r := c.run("doctor")
	if r.code != api.ExitOK {
		t.Errorf("doctor with no key: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLine(t, r.stdout, `^warn  daemon     not running.* — fix: agent-worker daemon`)
	wantLine(t, r.stdout, `^ok    mock       ready \(`)
	wantLine(t, r.stdout, `^warn  sdk        ANTHROPIC_API_KEY not set.* — fix: export ANTHROPIC_API_KEY=…$`)
	wantLine(t, r.stdout, `^warn  claude     claude is not on PATH — fix: npm install -g @anthropic-ai/claude-code@`+regexp.QuoteMeta(testedClaude)+`$`)
	wantLine(t, r.stdout, `^doctor: ready for mock-backed teams: no backend but the mock can run`)
	if r := c.run("doctor", "--strict"); r.code != api.ExitError {
		t.Errorf("doctor --strict with no key: exit %d, want %d\n%s%s", r.code, api.ExitError, r.stdout, r.stderr)
	} else {
		wantLine(t, r.stdout, `^doctor: not ready \(--strict\): no backend but the mock can run`)
	}
	rep, r := c.doctorJSON()
	if !rep.OK || r.code != api.ExitOK {
		t.Errorf("doctor --json with no key: ok %v, exit %d; want true, 0", rep.OK, r.code)
	}
	if sdk := rep.find(t, "sdk"); sdk.Status != checkWarn || !strings.Contains(sdk.Fix, "export ANTHROPIC_API_KEY=") {
		t.Errorf("sdk check without a key = %+v, want a warn with its fix", sdk)
	}
	if _, err := api.ReadDaemonInfo(c.home); !errors.Is(err, api.ErrNoDaemon) {
		t.Fatalf("doctor started a daemon (daemon.json: %v)", err)
	}

	// A daemon started without the key: setting it in this shell does not
	// help, and doctor says so.
	c.ok("new", "m", "--backend", "mock")
	withKey := append(slices.Clone(c.fixedEnv), "ANTHROPIC_API_KEY="+secret)
	c.fixedEnv, env = withKey, c.fixedEnv
	r = c.run("doctor", "--strict")
	c.fixedEnv = env
	if r.code != api.ExitError {
		t.Errorf("doctor --strict, daemon without the key: exit %d, want %d\n%s%s", r.code, api.ExitError, r.stdout, r.stderr)
	}
	// The daemon's version is the binary's, however go stamped it (a
	// build in a git checkout takes the commit's), not this test's.
	wantLine(t, r.stdout, `^ok    daemon     running, pid [0-9]+, version `+regexp.QuoteMeta(strings.Fields(c.ok("--version"))[1])+`,`)
	wantLine(t, r.stdout, `^ok    mock       ready`)
	wantLine(t, r.stdout, `^warn  sdk        ANTHROPIC_API_KEY not set \(it is set in this shell, but the daemon started without it\).* — fix: export ANTHROPIC_API_KEY=… then agent-worker stop --all`)
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("doctor printed the key's value:\n%s%s", r.stdout, r.stderr)
	}

	// A daemon with the key: the sdk backend can run, and the key's value
	// appears nowhere.
	c.ok("stop", "--all")
	c.startDaemon("ANTHROPIC_API_KEY=" + secret)
	r = c.run("doctor", "--strict")
	if r.code != api.ExitOK {
		t.Errorf("doctor --strict, daemon with the key: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLine(t, r.stdout, `^ok    sdk        ANTHROPIC_API_KEY set, for the default model `)
	wantLine(t, r.stdout, `^ok    store      sqlite .*agent-worker\.db \(`)
	wantLine(t, r.stdout, `^doctor: ok: mock, sdk can run; `)
	rep, r2 := c.doctorJSON()
	if !rep.OK || r2.code != api.ExitOK || !slices.Equal(rep.Runnable, []string{"mock", "sdk"}) {
		t.Errorf("doctor --json, daemon with the key: ok %v, runnable %v, exit %d; want true, [mock sdk], 0", rep.OK, rep.Runnable, r2.code)
	}
	if sdk := rep.find(t, "sdk"); sdk.Status != checkOK {
		t.Errorf("sdk check with the key = %+v, want ok", sdk)
	}
	for _, out := range []string{r.stdout, r.stderr, r2.stdout, r2.stderr} {
		if strings.Contains(out, secret) {
			t.Errorf("doctor printed the key's value:\n%s", out)
		}
	}
}
