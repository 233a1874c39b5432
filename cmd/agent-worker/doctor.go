package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/peterbourgon/ff/v3/ffcli"
	"golang.org/x/sys/unix"

	"github.com/agent-worker/agent-worker/host"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/sdk/llm"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// The CLI versions the end-to-end tests run against (CLAUDE_CODE_VERSION
// and CODEX_VERSION in the Makefile, which a test keeps equal): doctor
// warns about any other.
var (
	testedClaude = clis.Claude.Tested
	testedCodex  = clis.Codex.Tested
)

// minFreeDisk is the free space below which doctor warns: the store, the
// logs and the agents' work directories all live in the home.
const minFreeDisk = 1 << 30

// checkStatus is how one of doctor's checks came out.
type checkStatus string

const (
	checkOK   checkStatus = "ok"
	checkWarn checkStatus = "warn" // works, or may, but something needs a look
	checkFail checkStatus = "fail" // does not work
)

// check is one line of doctor: Fix is the command or setting that
// mends a warn or fail.
type check struct {
	Name   string      `json:"name"`
	Status checkStatus `json:"status"`
	Detail string      `json:"detail"`
	Fix    string      `json:"fix"`
}

// doctorReport is what `doctor --json` prints. OK is the exit status:
// no check failed and the mock can run (mock-backed teams are ready);
// Strict (--strict, for CI) also wants a backend beside the mock.
type doctorReport struct {
	Checks []check `json:"checks"`
	OK     bool    `json:"ok"`
	Strict bool    `json:"strict,omitempty"`
	// Runnable names the backends that can run.
	Runnable []string `json:"runnable"`
}

func doctorCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	e.common(fs)
	// What a daemon started from here would be started with (each also
	// read from AGENT_WORKER_*, as the daemon reads them), for the checks
	// made without one.
	var cfg host.Config
	var dirs stringList
	var mode sandbox.Mode
	fs.Var(&dirs, "plugins-dir", "without a daemon: extra directory searched for plugins first, as the daemon's flag (repeatable)")
	fs.StringVar(&cfg.Store, "store", "", "without a daemon: the store the daemon would use, as the daemon's flag (default: the SQLite file in --home)")
	fs.StringVar(&cfg.DefaultModel, "default-model", host.DefaultModel, "without a daemon: the daemon's --default-model, whose API key the sdk backend needs")
	fs.Var(sandboxFlag{&mode}, "sandbox", "without a daemon: the daemon's --sandbox")
	strict := fs.Bool("strict", false, "fail (exit 1) unless a backend beside the mock can run too, as CI wants")
	cmd := leaf("doctor", "doctor [--strict] [--json]", "check the home, daemon, store, plugins, backends, sandbox, console and disk, with a fix for each problem", fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			cfg.Home, cfg.PluginsDirs, cfg.Sandbox = e.home, dirs, mode
			f := e.gatherFacts(ctx, cfg)
			r := diagnose(f, *strict)
			if e.json {
				if err := e.printJSON(r); err != nil {
					return err
				}
			} else {
				for _, c := range r.Checks {
					line := fmt.Sprintf("%-6s%-11s%s", c.Status, c.Name, c.Detail)
					if c.Fix != "" {
						line += " — fix: " + c.Fix
					}
					e.printf("%s\n", line)
				}
				e.printf("%s\n", r.summary())
			}
			if !r.OK {
				return exitCode(api.ExitError)
			}
			return nil
		})
	cmd.LongHelp = `Prints one line per check, ok, warn or fail, with the command or setting
that fixes each warn and fail, then a summary. When a daemon runs, it is
asked what it sees (its environment decides which API keys runs get: only
the names of the variables are shown, never their values); otherwise this
machine is checked as a daemon started from this shell would see it, and
none is started.

Exit status 0 when nothing failed and the mock backend can run: ready for
mock-backed teams, with what a real backend would need (an API key, an agent
CLI) among the warnings; 1 otherwise. With --strict (for CI), a backend
beside the mock must be able to run too.`
	return cmd
}

// daemonState is what doctor found of the home's daemon.
type daemonState string

const (
	daemonRunning daemonState = "running"
	daemonStopped daemonState = "stopped"
	daemonSilent  daemonState = "silent" // its process lives but it does not answer
)

// doctorFacts is what doctor found, from the daemon or from this machine;
// diagnose judges them, so that the judgement is tested without either.
type doctorFacts struct {
	home string
	// remote: the daemon is AGENT_WORKER_URL's, on another machine
	// perhaps, so the home here says nothing about it.
	remote bool
	// homeErr is why the home cannot be read; homeMissing that it is not
	// made yet; homeMode its permissions; homeWritable whether this user
	// may write it.
	homeErr      string
	homeMissing  bool
	homeMode     os.FileMode
	homeWritable bool

	daemon        daemonState
	daemonPID     int
	daemonURL     string
	daemonVersion string
	daemonErr     string

	storePath    string // a file, or a redacted postgres:// URL
	storeBytes   int64
	storeMissing bool                // a SQLite file not made yet (no daemon)
	storeHealth  *api.StoreHealth    // the daemon's view
	storePending int                 // migrations a PostgreSQL store lacks (no daemon)
	storeErr     string              // why the store could not be checked
	plugins      []api.Plugin        // the daemon's, or examined here
	pluginDirs   []string            // where they were looked for
	pluginsErr   string              // why the daemon could not list them
	envKnown     bool                // an older daemon does not say
	env          []string            // names of the variables a run's plugin gets
	shellEnv     []string            // names of those set in this shell
	defaultModel string              // an sdk agent's model unless it names one
	sandbox      api.SandboxInfo     // as status shows it
	processes    *api.ProcessControl // the daemon's; nil without one
	consoleURL   string              // the daemon's console
	consoleErr   string              // why it did not answer
	opener       string              // what opens a browser here
	disk         api.Disk
	sessions     []api.Agent // the agents with an attached Claude Code session (the daemon's view)
}

// gatherFacts asks the running daemon, or looks at this machine as a
// daemon started from here would. It never starts a daemon.
func (e *env) gatherFacts(ctx context.Context, cfg host.Config) doctorFacts {
	f := doctorFacts{home: cfg.Home, daemon: daemonStopped, shellEnv: catalog.EnvNames(), opener: browserOpener()}
	if abs, err := filepath.Abs(cfg.Home); err == nil {
		f.home, cfg.Home = abs, abs
	}
	var d api.DaemonInfo
	var found bool
	if raw := os.Getenv("AGENT_WORKER_URL"); raw != "" {
		var err error
		if d, err = remoteDaemon(raw, os.Getenv("AGENT_WORKER_TOKEN"), os.Getenv("AGENT_WORKER_TLS_FINGERPRINT")); err != nil {
			f.daemon, f.daemonErr = daemonSilent, err.Error()
		} else {
			found, f.remote = true, true
		}
	} else if info, err := api.ReadDaemonInfo(cfg.Home); err == nil && api.ProcessAlive(info.PID) {
		d, found = info, true
	} else if err != nil && !errors.Is(err, api.ErrNoDaemon) {
		f.daemonErr = err.Error()
	}
	if !f.remote {
		f.lookAtHome()
	}
	if found {
		f.daemonPID, f.daemonURL = d.PID, d.URL()
		if f.fromDaemon(ctx, e.client(d)) {
			return f
		}
	}
	f.fromHere(ctx, cfg)
	return f
}

// lookAtHome stats the home on this machine.
func (f *doctorFacts) lookAtHome() {
	st, err := os.Stat(f.home)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.homeMissing = true
	case err != nil:
		f.homeErr = err.Error()
	case !st.IsDir():
		f.homeErr = "not a directory"
	default:
		f.homeMode = st.Mode().Perm()
		f.homeWritable = unix.Access(f.home, unix.W_OK|unix.X_OK) == nil
	}
}

// fromDaemon fills f from the daemon's answers; false when it does not
// answer, so that this machine is looked at instead.
func (f *doctorFacts) fromDaemon(ctx context.Context, c *api.Client) bool {
	h, err := c.Health(ctx)
	if err != nil {
		f.daemon, f.daemonErr = daemonSilent, err.Error()
		return false
	}
	f.daemon, f.daemonVersion = daemonRunning, h.Version
	if f.remote {
		f.home = h.Home
	}
	f.storePath, f.storeHealth = h.Store.Path, &h.Store
	f.sandbox, f.processes = h.Sandbox, &h.Processes
	f.plugins = h.Plugins
	for _, a := range h.Agents {
		if a.Session != nil {
			f.sessions = append(f.sessions, a)
		}
	}
	if l, err := c.Plugins(ctx); err == nil { // asks the plugins again: a CLI installed since
		f.plugins, f.pluginDirs = l.Plugins, l.Dirs
	} else {
		f.pluginsErr = err.Error()
	}
	if doc, err := c.Doctor(ctx); err == nil {
		f.envKnown, f.env, f.defaultModel, f.disk, f.storeBytes = true, doc.Env, doc.DefaultModel, doc.Disk, doc.StoreBytes
	} else {
		f.disk = api.Disk{Path: h.Home, Error: "the daemon does not say (" + err.Error() + ")"}
	}
	f.consoleURL = c.BaseURL + "/console/"
	f.consoleErr = consoleAnswers(ctx, c, f.consoleURL)
	return true
}

// consoleAnswers says why the console's login page does not answer, or "".
func consoleAnswers(ctx context.Context, c *api.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusNotFound {
		return resp.Status
	}
	return ""
}

// fromHere fills f from this machine as a daemon started from this shell
// would see it: its plugins examined in a throwaway directory, this
// shell's environment, the store at rest.
func (f *doctorFacts) fromHere(ctx context.Context, cfg host.Config) {
	f.envKnown, f.env, f.defaultModel = true, f.shellEnv, cfg.DefaultModel
	f.pluginDirs = host.PluginDirs(cfg)
	if copies, err := os.MkdirTemp("", "aw-doctor-"); err != nil {
		f.pluginsErr = err.Error()
	} else {
		cat := catalog.NewCatalog(f.pluginDirs, copies, os.TempDir(), 0, hclog.NewNullLogger())
		cat.Scan(ctx)
		f.plugins = cat.List()
		os.RemoveAll(copies)
	}
	f.storePath = host.StorePath(cfg)
	if store.IsPostgresURL(f.storePath) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := store.PendingPostgres(cctx, f.storePath)
		cancel()
		if f.storePending = n; err != nil {
			f.storeErr = err.Error()
		}
		f.storePath = store.RedactURL(f.storePath)
	} else if _, err := os.Stat(f.storePath); errors.Is(err, os.ErrNotExist) {
		f.storeMissing = true
	} else if err != nil {
		f.storeErr = err.Error()
	} else {
		f.storeBytes = host.SQLiteBytes(f.storePath)
	}
	status := sb.Status{Why: "not probed (--sandbox off)"}
	if why := testEnv(testNoLandlock); why != "" {
		status = sb.Status{Why: why}
	} else if cfg.Sandbox != sandbox.Off {
		status = sb.Probe()
	}
	mode := cfg.Sandbox
	if mode == "" {
		mode = sandbox.Auto
	}
	f.sandbox = sandbox.New(mode, status, cfg.Home).Info()
	f.disk = host.DiskFree(cfg.Home)
}

// diagnose judges f: one check per line, in the order a user mends them,
// each warn and fail with its fix.
func diagnose(f doctorFacts, strict bool) doctorReport {
	r := doctorReport{Checks: []check{}, Runnable: []string{}, Strict: strict}
	add := func(name string, st checkStatus, detail, fix string) {
		r.Checks = append(r.Checks, check{Name: name, Status: st, Detail: detail, Fix: fix})
	}
	f.checkHome(add)
	f.checkDaemon(add)
	f.checkStore(add)
	f.checkSessions(add)
	f.checkPlugins(add)
	if f.checkMock(add) {
		r.Runnable = append(r.Runnable, "mock")
	}
	if f.checkSDK(add) {
		r.Runnable = append(r.Runnable, "sdk")
	}
	for _, b := range cliBackends {
		if f.checkCLI(add, b) {
			r.Runnable = append(r.Runnable, b.name)
		}
	}
	f.checkSandbox(add)
	if f.processes != nil {
		add("processes", checkOK, f.processes.Mechanism+": "+f.processes.Detail, "")
		if len(f.processes.Unenforced) > 0 {
			add("limits", checkWarn, f.processes.Limits, "a run can start as many processes and use as much memory and CPU as the daemon's own limits allow: give the daemon a cgroup v2 it may manage (e.g. systemd Delegate=yes), see docs/operations.md")
		} else if f.processes.Limits != "" {
			add("limits", checkOK, f.processes.Limits, "")
		}
	}
	f.checkConsole(add)
	f.checkDisk(add)
	failed := slices.ContainsFunc(r.Checks, func(c check) bool { return c.Status == checkFail })
	r.OK = !failed && slices.Contains(r.Runnable, "mock") && (!strict || len(r.Runnable) > 1)
	return r
}

// addFunc adds one check to a report.
type addFunc func(name string, st checkStatus, detail, fix string)

// summary is the last line of doctor.
func (r doctorReport) summary() string {
	var warns, fails int
	for _, c := range r.Checks {
		switch c.Status {
		case checkWarn:
			warns++
		case checkFail:
			fails++
		}
	}
	counts := fmt.Sprintf("%d warning%s, %d failure%s", warns, plural(warns), fails, plural(fails))
	var can string
	mockOnly := slices.Equal(r.Runnable, []string{"mock"})
	switch {
	case !slices.Contains(r.Runnable, "mock"):
		can = "the mock backend cannot run"
	case mockOnly:
		can = "no backend but the mock can run: a real backend needs an API key or an agent CLI (see the warnings above)"
	default:
		can = strings.Join(r.Runnable, ", ") + " can run"
	}
	verdict := "ok"
	switch {
	case !r.OK && r.Strict && mockOnly:
		verdict = "not ready (--strict)"
	case !r.OK:
		verdict = "not ready"
	case mockOnly:
		verdict = "ready for mock-backed teams"
	}
	return fmt.Sprintf("doctor: %s: %s; %s", verdict, can, counts)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (f doctorFacts) checkHome(add addFunc) {
	switch {
	case f.remote:
		add("home", checkOK, f.home+" (the daemon's, at AGENT_WORKER_URL)", "")
	case f.homeErr != "":
		add("home", checkFail, f.home+": "+f.homeErr, "remove or fix it, or use another home with --home (or AGENT_WORKER_HOME)")
	case f.homeMissing:
		add("home", checkOK, f.home+": not made yet; the first command that starts the daemon makes it (mode 700)", "")
	case !f.homeWritable:
		add("home", checkFail, fmt.Sprintf("%s (mode %04o) is not writable by you", f.home, f.homeMode), "chmod u+rwx "+f.home+", or use another home with --home")
	case f.homeMode&0o077 != 0:
		add("home", checkWarn, fmt.Sprintf("%s is open to other users (mode %04o); it holds the store and the daemon's token", f.home, f.homeMode), "chmod 700 "+f.home)
	default:
		add("home", checkOK, fmt.Sprintf("%s (mode %04o)", f.home, f.homeMode), "")
	}
}

func (f doctorFacts) checkDaemon(add addFunc) {
	switch f.daemon {
	case daemonRunning:
		detail := fmt.Sprintf("running, version %s, at %s", f.daemonVersion, f.daemonURL)
		if !f.remote {
			detail = fmt.Sprintf("running, pid %d, version %s, at %s", f.daemonPID, f.daemonVersion, f.daemonURL)
		}
		switch {
		case f.daemonVersion == api.Version:
			add("daemon", checkOK, detail, "")
		case f.remote:
			add("daemon", checkWarn, detail+"; this CLI is "+api.Version, "run the same version on both sides")
		default:
			add("daemon", checkWarn, detail+"; this CLI is "+api.Version, "agent-worker stop --all (the next command starts this CLI's daemon)")
		}
	case daemonSilent:
		if f.remote || f.daemonPID == 0 {
			add("daemon", checkFail, "does not answer: "+f.daemonErr, "check AGENT_WORKER_URL and AGENT_WORKER_TOKEN")
			return
		}
		add("daemon", checkFail, fmt.Sprintf("pid %d at %s does not answer: %s", f.daemonPID, f.daemonURL, f.daemonErr),
			fmt.Sprintf("agent-worker stop --all (or kill %d); the other checks below are this machine's", f.daemonPID))
	default:
		detail := "not running; the checks below are this machine's, as a daemon started from this shell would see it"
		if f.daemonErr != "" {
			detail = "not running (" + f.daemonErr + "); the checks below are this machine's"
		}
		add("daemon", checkWarn, detail, "agent-worker daemon (or any other command starts one)")
	}
}

// checkSessions warns of each attached Claude Code session that has gone
// stale (no hook for five minutes): its agent is idle, not attached.
func (f doctorFacts) checkSessions(add addFunc) {
	for _, a := range f.sessions {
		if s := a.Session; s.Stale {
			add("sessions", checkWarn, fmt.Sprintf("%s's Claude Code session %s in %s has called no hook since %s: stale, %s is idle",
				a.Target, s.ID, s.Cwd, s.HeartbeatAt.Local().Format(time.DateTime), a.Target),
				"go back to that session (its next hook attaches it again), or start a new one in "+s.Cwd)
		}
	}
}

func (f doctorFacts) checkStore(add addFunc) {
	pg := store.IsPostgresURL(f.storePath)
	what := "sqlite " + f.storePath
	if pg {
		what = "postgres " + f.storePath
	}
	if h := f.storeHealth; h != nil {
		logs := filepath.Join(f.home, api.LogDir, "daemon.log")
		switch {
		case h.CorruptSince != nil:
			add("store", checkFail, what+" is damaged: "+h.Corrupt, "stop the daemon and restore a backup (agent-worker backup --help)")
		case h.UnreachableSince != nil:
			add("store", checkFail, what+" is unreachable: "+h.LastError, "start the PostgreSQL server, or fix --store (AGENT_WORKER_STORE)")
		case !h.Linked:
			add("store", checkFail, what+" was deleted or replaced under the daemon", "agent-worker stop --all (the next command starts a daemon on the file)")
		case h.Failing:
			add("store", checkFail, what+": writes fail: "+h.LastError, "free disk space or fix the file's permissions; see "+logs)
		case pg:
			add("store", checkOK, what+": reachable, migrated", "")
		default:
			add("store", checkOK, what+" ("+byteSize(f.storeBytes)+")", "")
		}
		return
	}
	switch {
	case pg && f.storeErr != "":
		add("store", checkFail, what+": "+f.storeErr, "start the PostgreSQL server, or fix --store (AGENT_WORKER_STORE)")
	case pg && f.storePending > 0:
		add("store", checkWarn, fmt.Sprintf("%s: reachable; %d migrations not applied yet", what, f.storePending), "agent-worker daemon --store … applies them as it starts")
	case pg:
		add("store", checkOK, what+": reachable, migrated", "")
	case f.storeErr != "":
		add("store", checkFail, what+": "+f.storeErr, "fix the file's permissions, or use another home with --home")
	case f.storeMissing:
		add("store", checkOK, what+": not made yet; the daemon makes it", "")
	default:
		add("store", checkOK, what+" ("+byteSize(f.storeBytes)+")", "")
	}
}

// installFix is how to install a first-party plugin beside agent-worker.
func installFix(kind, name string) string {
	return fmt.Sprintf("go install %s/cmd/agent-worker-%s-%s@%s (or %[1]s/cmd/...@%[4]s for all of them)", api.Module, kind, name, api.InstallVersion())
}

func (f doctorFacts) checkPlugins(add addFunc) {
	dirs := strings.Join(f.pluginDirs, ", ")
	if f.pluginsErr != "" && len(f.plugins) == 0 {
		add("plugins", checkWarn, "could not be listed: "+f.pluginsErr, "agent-worker plugins")
		return
	}
	var names []string
	var broken []api.Plugin
	for _, p := range f.plugins {
		switch {
		case p.Shadowed:
		case p.Error != "":
			broken = append(broken, p)
		default:
			names = append(names, p.Kind+" "+p.Name)
		}
	}
	switch {
	case len(names) == 0:
		add("plugins", checkWarn, "none found in "+dirs, installFix("backend", "mock"))
	case len(broken) > 0:
		add("plugins", checkWarn, fmt.Sprintf("%d healthy (%s), %d broken", len(names), strings.Join(names, ", "), len(broken)), "see the lines below")
	default:
		add("plugins", checkOK, fmt.Sprintf("%d healthy (%s) in %s", len(names), strings.Join(names, ", "), dirs), "")
	}
	for _, p := range broken {
		fix := "reinstall it, or remove " + p.Path
		if slices.Contains(workflow.Backends, p.Name) && p.Name != workflow.External && p.Kind == "backend" {
			fix = installFix(p.Kind, p.Name) + ", or remove " + p.Path
		}
		add("plugin", checkWarn, p.Kind+" "+p.Name+" ("+p.Path+"): "+p.Error, fix)
	}
}

// backendPlugin is the plugin of a backend the daemon would run, or the
// broken one in its place (Error set); ok is false when there is none.
func (f doctorFacts) backendPlugin(name string) (api.Plugin, bool) {
	for _, p := range f.plugins {
		if p.Kind == "backend" && p.Name == name && !p.Shadowed {
			return p, true
		}
	}
	return api.Plugin{}, false
}

// checkInstalled adds the line of a backend whose plugin is missing or
// broken, and says whether it is installed and healthy.
func (f doctorFacts) checkInstalled(add addFunc, name string, missing checkStatus) (api.Plugin, bool) {
	p, ok := f.backendPlugin(name)
	switch {
	case !ok:
		add(name, missing, "agent-worker-backend-"+name+" is not installed (searched "+strings.Join(f.pluginDirs, ", ")+")", installFix("backend", name))
		return p, false
	case p.Error != "":
		add(name, missing, "plugin "+p.Path+" is broken: "+p.Error, installFix("backend", name))
		return p, false
	}
	return p, true
}

func (f doctorFacts) checkMock(add addFunc) bool {
	p, ok := f.checkInstalled(add, "mock", checkFail)
	if ok {
		add("mock", checkOK, "ready ("+p.Path+")", "")
	}
	return ok
}

// has reports whether name is set in the environment runs get.
func (f doctorFacts) has(name string) bool { return slices.Contains(f.env, name) }

// keyFix is how to give runs the variable name: in the daemon's
// environment, which a running daemon took when it started.
func (f doctorFacts) keyFix(name string) string {
	switch {
	case f.remote:
		return "set " + name + " in the daemon's environment and restart it"
	case f.daemon == daemonRunning:
		return "export " + name + "=… then agent-worker stop --all (the next command starts the daemon with it)"
	}
	return "export " + name + "=…"
}

// onlyHere notes a variable set in this shell that the daemon lacks.
func (f doctorFacts) onlyHere(name string) string {
	if f.daemon == daemonRunning && !f.remote && !f.has(name) && slices.Contains(f.shellEnv, name) {
		return " (it is set in this shell, but the daemon started without it)"
	}
	return ""
}

func (f doctorFacts) checkSDK(add addFunc) bool {
	if _, ok := f.checkInstalled(add, "sdk", checkWarn); !ok {
		return false
	}
	if !f.envKnown {
		add("sdk", checkWarn, "the daemon (version "+f.daemonVersion+") does not say which API keys it has", "agent-worker stop --all (the next command starts this CLI's daemon)")
		return false
	}
	need := llm.KeyEnv(f.defaultModel, "", "")
	if need == "" || f.has(need) {
		detail := need + " set, for the default model " + f.defaultModel
		if need == "" {
			detail = "the default model " + f.defaultModel + " needs no API key"
		}
		add("sdk", checkOK, detail, "")
		return true
	}
	var others []string
	for _, svc := range llm.Services {
		if svc.KeyEnv != "" && f.has(svc.KeyEnv) {
			others = append(others, svc.KeyEnv)
		}
	}
	slices.Sort(others)
	if len(others) > 0 {
		add("sdk", checkWarn, fmt.Sprintf("%s not set, which the default model %s needs%s; %s set: give sdk agents a --model of that service",
			need, f.defaultModel, f.onlyHere(need), strings.Join(others, ", ")), f.keyFix(need))
		return true
	}
	add("sdk", checkWarn, need+" not set"+f.onlyHere(need)+", nor any other model service's key", f.keyFix(need))
	return false
}

// cliBackend is a backend that drives an agent CLI.
type cliBackend struct {
	name, cli string
	// keys are the variables the CLI authenticates with, the first the
	// one to suggest; login is its own login, used without one.
	keys  []string
	login string
	// tested is the version our tests run ("" for none), install the
	// command that installs it.
	tested, install string
	// optional marks the acp backend's presets: a preset whose plugin or
	// CLI is not there is no problem (one line says so, not a warning).
	optional bool
}

var cliBackends = []cliBackend{
	{name: "claude", cli: "claude", keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}, login: "claude's own login (`claude`, then /login)",
		tested: testedClaude, install: clis.Claude.Install},
	{name: "codex", cli: "codex", keys: []string{"OPENAI_API_KEY"}, login: "codex's own login (`codex login`)",
		tested: testedCodex, install: clis.Codex.Install},
	{name: "cursor", cli: "cursor-agent", keys: []string{"CURSOR_API_KEY"}, login: "cursor-agent's own login (`cursor-agent login`)",
		install: clis.Cursor.Install},
	// The acp backend's presets (plugins/clis.ACPPresets).
	{name: "gemini", cli: "gemini", keys: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, login: "gemini's own login (`gemini`, then /auth)",
		tested: clis.Gemini.Tested, install: clis.Gemini.Install, optional: true},
	{name: "claude-acp", cli: "claude-agent-acp", keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}, login: "claude's own login (`claude`, then /login)",
		tested: clis.ClaudeACP.Tested, install: clis.ClaudeACP.Install, optional: true},
	{name: "codex-acp", cli: "codex-acp", keys: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, login: "codex's own login (`codex login`)",
		tested: clis.CodexACP.Tested, install: clis.CodexACP.Install, optional: true},
	{name: "opencode", cli: "opencode", keys: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, login: "opencode's own login (`opencode auth login`)",
		install: clis.OpenCode.Install, optional: true},
}

// semver finds the version in a CLI's --version line.
var semver = regexp.MustCompile(`[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?`)

func (f doctorFacts) checkCLI(add addFunc, b cliBackend) bool {
	where := "on PATH"
	if f.daemon == daemonRunning {
		where = "on the daemon's PATH"
	}
	if b.optional {
		switch p, ok := f.backendPlugin(b.name); {
		case !ok || p.Error != "":
			return false // a preset left out: nothing to say
		case strings.HasPrefix(p.Status, "missing"):
			add(b.name, checkOK, b.cli+" is not "+where+" (optional: "+b.install+" to use backend "+b.name+")", "")
			return false
		}
	}
	p, ok := f.checkInstalled(add, b.name, checkWarn)
	if !ok {
		return false
	}
	switch {
	case p.Status == "":
		add(b.name, checkOK, "installed; the plugin does not say whether "+b.cli+" is", "")
		return true
	case strings.HasPrefix(p.Status, "missing"):
		add(b.name, checkWarn, b.cli+" is not "+where, b.install)
		return false
	case strings.HasPrefix(p.Status, "broken"):
		add(b.name, checkWarn, p.Status, b.install)
		return false
	}
	key := ""
	for _, k := range b.keys {
		if f.envKnown && f.has(k) {
			key = k
			break
		}
	}
	detail := p.Status
	if key != "" {
		detail += "; " + key + " set"
	} else {
		detail += "; no " + b.keys[0] + ": runs use " + b.login
	}
	if b.name == "claude" && key == "" && f.sandbox.State == api.SandboxOn {
		// A confined run has a config dir of its own (plugins/claude).
		add(b.name, checkWarn, p.Status+"; no "+b.keys[0]+f.onlyHere(b.keys[0])+", and sandboxed runs cannot see a `claude` login", f.keyFix(b.keys[0]))
		return false
	}
	switch v := semver.FindString(p.Status); {
	case b.tested == "":
		add(b.name, checkOK, detail+" (no version is pinned in our tests)", "")
	case v != b.tested:
		add(b.name, checkWarn, detail+"; not the version we test ("+b.tested+")", b.install)
	default:
		add(b.name, checkOK, detail, "")
	}
	return true
}

func (f doctorFacts) checkSandbox(add addFunc) {
	restart := "agent-worker stop --all, then start the daemon "
	if f.daemon != daemonRunning {
		restart = "start the daemon "
	}
	s := f.sandbox
	switch {
	case s.State == api.SandboxOn:
		add("sandbox", checkOK, s.String(), "")
	case s.State == api.SandboxOff:
		add("sandbox", checkWarn, s.Detail, restart+"with --sandbox auto (and AGENT_WORKER_SANDBOX unset)")
	case s.Mode == string(sandbox.Required):
		add("sandbox", checkFail, s.String(), restart+"with --sandbox auto to run agents unconfined, or use a Linux kernel with Landlock")
	default:
		add("sandbox", checkWarn, s.String(), "a Linux kernel (5.13 or later) with Landlock enabled; or --sandbox off to run unconfined on purpose")
	}
}

func (f doctorFacts) checkConsole(add addFunc) {
	browser := ""
	if f.opener == "" && !f.remote {
		browser = " (no browser here: open the link it prints where there is one)"
	}
	switch {
	case f.daemon != daemonRunning:
		add("console", checkOK, "served by the daemon at /console/: `agent-worker console` prints a login link"+browser, "")
	case f.consoleErr != "":
		add("console", checkWarn, f.consoleURL+" does not answer: "+f.consoleErr, "see "+filepath.Join(f.home, api.LogDir, "daemon.log"))
	default:
		add("console", checkOK, f.consoleURL+": `agent-worker console` prints a login link"+browser, "")
	}
}

func (f doctorFacts) checkDisk(add addFunc) {
	d := f.disk
	switch {
	case d.Error != "":
		add("disk", checkWarn, "free space unknown: "+d.Error, "df "+d.Path)
	case d.FreeBytes < minFreeDisk:
		add("disk", checkWarn, byteSize(int64(d.FreeBytes))+" free at "+d.Path, "free space there, or move the home (--home or AGENT_WORKER_HOME)")
	default:
		add("disk", checkOK, byteSize(int64(d.FreeBytes))+" free at "+d.Path, "")
	}
}
