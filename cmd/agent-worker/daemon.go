package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/peterbourgon/ff/v3/ffyaml"

	"github.com/agent-worker/agent-worker/host"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/plugins"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/host/scheduler"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func daemonCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	var (
		cfg        host.Config
		pluginDirs stringList
		logLevel   string
		logJSON    bool
	)
	fs.StringVar(&cfg.Home, "home", api.DefaultHome(), "agent-worker home (daemon.json, database, logs)")
	fs.StringVar(&cfg.Store, "store", "", "where state is kept: a postgres:// URL shared by the daemons of a cluster (default: the SQLite file in --home)")
	fs.BoolVar(&cfg.CheckStore, "check-store", false, "check the whole SQLite file (integrity_check: every index against its table) before starting; every start runs the quicker quick_check, and a damaged file is refused either way")
	fs.StringVar(&cfg.Listen, "listen", host.DefaultListen, "address of the HTTP API; port 0 picks a free port")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a --listen address other machines can reach (the API is plain HTTP and the token gives full control)")
	fs.StringVar(&cfg.DefaultModel, "default-model", host.DefaultModel, "model of an sdk agent created without --model")
	fs.Var(&pluginDirs, "plugins-dir", "extra directory searched for plugins first (repeatable)")
	fs.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	fs.DurationVar(&cfg.Scheduler.PollInterval, "poll-interval", scheduler.DefaultPollInterval, "how often agents check their inbox without a wake (a safety net)")
	fs.IntVar(&cfg.Scheduler.MaxConcurrent, "max-concurrent", 0, "runs at once across the daemon (default 2 × cores)")
	fs.DurationVar(&cfg.Supervisor.RunTimeout, "run-timeout", plugins.DefaultRunTimeout, "longest a run may take")
	fs.DurationVar(&cfg.Supervisor.IdleTimeout, "idle-timeout", plugins.DefaultIdleTimeout, "longest a run's backend may go without an event (no progress)")
	fs.DurationVar(&cfg.Supervisor.HeartbeatTimeout, "heartbeat-timeout", plugins.DefaultHeartbeatTimeout, "longest a run's plugin process may go without an event or answering a ping before it is killed and the run retried")
	fs.Var(sparesFlag{&cfg.Supervisor.Spares}, "spares", "warm spare plugin processes kept per backend in use: N for all, or per backend (e.g. 1,sdk=0,mock=2); 0 starts every run's process cold")
	fs.DurationVar(&cfg.Supervisor.SpareIdle, "spare-idle", plugins.DefaultSpareIdle, "stop a backend's warm spares after it has had no run for this long")
	fs.Var(sandboxFlag{&cfg.Sandbox}, "sandbox", "confine every run with Landlock: auto (where the kernel can; runs start unconfined, with a warning, where it cannot), required (refuse runs where it cannot, and agents with sandbox mode: off) or off")
	fs.StringVar(&cfg.NotifyConfig, "notify-config", "", "YAML file of webhooks told of events in every workflow: a list of {webhook: URL, events: [question, approval, run_failed, over_budget, loop_guard, idle, member_down], secret_env: NAME}")
	fs.String("config", "", "YAML file with any of these flags (flags and AGENT_WORKER_* env vars win)")
	return &ffcli.Command{
		Name:       "daemon",
		ShortUsage: "agent-worker daemon [--listen 127.0.0.1:5099 [--allow-remote]] [--home DIR] [--store postgres://…] [--check-store] [--plugins-dir DIR] [--default-model M] [--spares N|backend=N,...] [--sandbox auto|required|off] [--notify-config FILE] [--config FILE]",
		ShortHelp:  "run the daemon in the foreground",
		LongHelp: `Runs the daemon until SIGINT/SIGTERM or ` + "`agent-worker stop --all`" + `.
Other commands start it on their own when it is not running; run it by hand
to watch its log or to choose its address. It writes daemon.json (mode 0600)
to the home so clients can find it, and only one daemon runs per home.
It listens on loopback only unless --allow-remote is given: whoever has
the token controls the daemon, and the API is plain HTTP.
It refuses to start on a damaged SQLite file (PRAGMA quick_check at every
start, integrity_check with --check-store), naming the file and how to
restore it: see ` + "`agent-worker backup --help`" + `.`,
		FlagSet: fs,
		Options: []ff.Option{
			ff.WithEnvVarPrefix(envPrefix),
			ff.WithConfigFileFlag("config"),
			ff.WithConfigFileParser(ffyaml.Parser),
		},
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("daemon takes no arguments, got %q", strings.Join(args, " "))
			}
			level := hclog.LevelFromString(logLevel)
			if level == hclog.NoLevel {
				return usagef("unknown --log-level %q: use trace, debug, info, warn or error", logLevel)
			}
			root := hclog.New(&hclog.LoggerOptions{
				Name: "agent-worker", Level: level, Output: e.stderr, JSONFormat: logJSON,
			})
			hclog.SetDefault(root)
			cfg.Logger = root
			cfg.PluginsDirs = pluginDirs
			if why := os.Getenv(testNoLandlock); why != "" {
				root.Warn("test hook set: the kernel is taken to have no Landlock", "env", testNoLandlock)
				cfg.SandboxStatus = &sb.Status{Why: why}
			}
			if why := os.Getenv(testNoCgroups); why != "" {
				root.Warn("test hook set: plugin processes get no cgroup", "env", testNoCgroups)
				cfg.NoCgroups = why
			}
			if marker := os.Getenv(testPauseBeforeSettle); marker != "" {
				root.Warn("test hook set: every successful run pauses before it is settled", "env", testPauseBeforeSettle)
				cfg.Scheduler.BeforeSettle = pauseBeforeSettle(marker)
			}

			h, err := host.New(cfg)
			if err != nil {
				return err
			}
			defer h.Close()
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return h.Run(ctx)
		},
	}
}

// sparesFlag is --spares, read by plugins.ParseSpares; unset it is the
// supervisor's default (one spare per backend in use).
type sparesFlag struct{ dst **plugins.Spares }

func (f sparesFlag) String() string {
	if f.dst == nil || *f.dst == nil {
		return plugins.DefaultSpares.String()
	}
	return (*f.dst).String()
}

func (f sparesFlag) Set(v string) error {
	s, err := plugins.ParseSpares(v)
	if err != nil {
		return err
	}
	*f.dst = &s
	return nil
}

// sandboxFlag is --sandbox, read by sandbox.ParseMode.
type sandboxFlag struct{ dst *sandbox.Mode }

func (f sandboxFlag) String() string {
	if f.dst == nil || *f.dst == "" {
		return string(sandbox.Auto)
	}
	return string(*f.dst)
}

func (f sandboxFlag) Set(v string) error {
	m, err := sandbox.ParseMode(v)
	if err != nil {
		return err
	}
	*f.dst = m
	return nil
}

// testNoLandlock names a test hook: set to a reason, the daemon takes the
// kernel to have no Landlock for that reason, as on macOS or an old
// kernel, so that --sandbox required can be tried where Landlock works.
const testNoLandlock = "AGENT_WORKER_TEST_NO_LANDLOCK"

// testNoCgroups names a test hook: set to a reason, the daemon makes no
// cgroups for plugin processes, as where cgroup v2 is not delegated, so
// that the subreaper fallback can be tried where cgroups work.
const testNoCgroups = "AGENT_WORKER_TEST_NO_CGROUPS"

// testPauseBeforeSettle names a test hook. Set to a file path, it makes
// the daemon write the id of each successful run to that file once the
// run's plugin has exited, and then wait, without settling the run, until
// the daemon stops: a test kills it there to check that a run is either
// settled whole or redone after a restart.
const testPauseBeforeSettle = "AGENT_WORKER_TEST_PAUSE_BEFORE_SETTLE"

// pauseBeforeSettle is the BeforeSettle hook of testPauseBeforeSettle. The
// marker is written through a rename, so a test never reads half an id.
func pauseBeforeSettle(marker string) func(context.Context, string) error {
	return func(ctx context.Context, runID string) error {
		tmp := marker + ".tmp"
		if err := os.WriteFile(tmp, []byte(runID), 0o600); err != nil {
			return fmt.Errorf("test hook: %w", err)
		}
		if err := os.Rename(tmp, marker); err != nil {
			return fmt.Errorf("test hook: %w", err)
		}
		<-ctx.Done()
		return ctx.Err()
	}
}
