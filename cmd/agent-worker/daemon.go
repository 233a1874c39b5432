package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/internal/configfile"
	"github.com/agent-worker/agent-worker/sdk/backend"
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
	fs.StringVar(&cfg.Listen, "listen", host.DefaultListen, "address of the HTTP API; port 0 picks a free port. Unset, the daemon takes a free port when the default is in use (clients find it in daemon.json); set, an address in use is an error")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a --listen address other machines can reach (the token gives full control): needs --tls auto, --tls-cert/--tls-key or --insecure-http")
	fs.Var(tlsFlag{&cfg.TLS}, "tls", "auto: serve HTTPS with a self-signed certificate kept in the home, which clients pin by its fingerprint (status shows it); off: plain HTTP")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "serve HTTPS with this certificate (PEM; intermediates after it), verified by clients the usual way")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.BoolVar(&cfg.InsecureHTTP, "insecure-http", false, "let --allow-remote serve plain HTTP (a trusted network, or a TLS proxy in front)")
	fs.StringVar(&cfg.DefaultModel, "default-model", host.DefaultModel, "model of an sdk agent created without --model")
	fs.Var(&pluginDirs, "plugins-dir", "extra directory searched for plugins first (repeatable)")
	fs.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	fs.DurationVar(&cfg.Scheduler.PollInterval, "poll-interval", scheduler.DefaultPollInterval, "how often agents check their inbox without a wake (a safety net)")
	fs.IntVar(&cfg.Scheduler.MaxConcurrent, "max-concurrent", 0, "runs at once across the daemon (default 2 × cores)")
	fs.DurationVar(&cfg.Supervisor.RunTimeout, "run-timeout", runner.DefaultRunTimeout, "longest a run may take")
	fs.DurationVar(&cfg.Supervisor.IdleTimeout, "idle-timeout", runner.DefaultIdleTimeout, "longest a run's backend may go without an event (no progress)")
	fs.DurationVar(&cfg.Supervisor.HeartbeatTimeout, "heartbeat-timeout", runner.DefaultHeartbeatTimeout, "longest a run's plugin process may go without an event or answering a ping before it is killed and the run retried")
	fs.Var(sparesFlag{&cfg.Supervisor.Spares}, "spares", "warm spare plugin processes kept per backend in use: N for all, or per backend (e.g. 1,sdk=0,mock=2); 0 starts every run's process cold")
	fs.DurationVar(&cfg.Supervisor.SpareIdle, "spare-idle", spares.DefaultIdle, "stop a backend's warm spares after it has had no run for this long")
	fs.Var(runLimitsFlag{&cfg.Supervisor.RunLimits}, "run-limits", "what one run may use, its processes together, unless its agent sets limits: pids (processes and threads), memory (e.g. 2G) and cpu (cores), e.g. pids=1024,memory=4G,cpu=2; max lifts one; enforced with the run's cgroup (see status)")
	fs.Var(sandboxFlag{&cfg.Sandbox}, "sandbox", "confine every run with Landlock: auto (where the kernel can; runs start unconfined, with a warning, where it cannot), required (refuse runs where it cannot, and agents with sandbox mode: off) or off")
	fs.StringVar(&cfg.NotifyConfig, "notify-config", "", "YAML file of webhooks told of events in every workflow: a list of {webhook: URL, events: [question, approval, run_failed, over_budget, loop_guard, idle, member_down], secret_env: NAME}")
	fs.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "export traces over OTLP to this collector URL, e.g. http://localhost:4318 (http/protobuf) or, with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, http://localhost:4317; unset, OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT decides, and with neither tracing is off")
	fs.BoolVar(&cfg.OTLPMetrics, "otlp-metrics", false, "export the model calls' gen_ai.client.token.usage and gen_ai.client.operation.duration histograms over OTLP to the traces' collector, as OTEL_METRICS_EXPORTER=otlp does (the Prometheus /metrics stays)")
	fs.BoolVar(&cfg.CaptureContent, "otel-capture-content", false, "put the prompts, replies and tool arguments and results on the chat and tool spans, as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true does; off, spans carry no text of the team's work")
	fs.StringVar(&cfg.TraceURL, "trace-url", "", "address of a trace in your tracing UI, {trace_id} replaced: the console's run page links to the run's trace, e.g. http://localhost:16686/trace/{trace_id}")
	fs.String("config", "", "YAML file with any of these flags (flags and AGENT_WORKER_* env vars win)")
	return &ffcli.Command{
		Name:       "daemon",
		ShortUsage: "agent-worker daemon [--listen 127.0.0.1:5099 [--allow-remote]] [--tls auto | --tls-cert F --tls-key F | --insecure-http] [--home DIR] [--store postgres://…] [--check-store] [--plugins-dir DIR] [--default-model M] [--spares N|backend=N,...] [--sandbox auto|required|off] [--notify-config FILE] [--otlp-endpoint URL [--otlp-metrics] [--otel-capture-content]] [--trace-url URL] [--config FILE]",
		ShortHelp:  "run the daemon in the foreground",
		LongHelp: `Runs the daemon until SIGINT/SIGTERM or ` + "`agent-worker stop --all`" + `.
Other commands start it on their own when it is not running; run it by hand
to watch its log or to choose its address. It writes daemon.json (mode 0600)
to the home so clients can find it, and only one daemon runs per home.
It listens on loopback only unless --allow-remote is given: whoever has
the token controls the daemon, so other machines are let in only over
HTTPS (--tls auto, or --tls-cert and --tls-key) unless --insecure-http
says the network is trusted. With --tls auto the daemon makes a
self-signed certificate once (kept in the home's tls/ folder) and the CLI
pins its fingerprint from daemon.json; elsewhere, set AGENT_WORKER_URL to
its https:// address and AGENT_WORKER_TLS_FINGERPRINT to the fingerprint
` + "`agent-worker status`" + ` shows. Runs reach the MCP server on a loopback-only
plain HTTP port of their own.
It refuses to start on a damaged SQLite file (PRAGMA quick_check at every
start, integrity_check with --check-store), naming the file and how to
restore it: see ` + "`agent-worker backup --help`" + `.`,
		FlagSet: fs,
		Options: []ff.Option{
			ff.WithEnvVarPrefix(envPrefix),
			ff.WithConfigFileFlag("config"),
			ff.WithConfigFileParser(configfile.Parser(fs, "config")),
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
			if !flagSet(fs, "listen") {
				cfg.Listen = "" // no choice: the default, or a free port when it is taken
			}
			applyTestHooks(&cfg, root)
			ctx, unwatch, err := endWithTestParent(ctx, root)
			if err != nil {
				return err
			}
			defer unwatch()

			h, err := host.New(cfg)
			var inUse *host.AddrInUseError
			if errors.As(err, &inUse) {
				return api.Errorf(api.CodeConflict, "%s", inUse.Explain(pickAnotherAddress(os.Getenv(autoStartedEnv) != "")))
			}
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

// flagSet says whether the user set flag name: on the command line, by
// its AGENT_WORKER_* variable or in --config (ff sets the flag for both).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// autoStartedEnv marks a daemon a client command started (startDaemon):
// the user ran no daemon command, so its advice names what they can set.
const autoStartedEnv = "AGENT_WORKER_AUTO_STARTED"

// pickAnotherAddress is how the user who chose a taken address picks
// another: the daemon command has --listen; a command that started the
// daemon for them has only the variable, and unset the daemon finds a
// free port by itself.
func pickAnotherAddress(autoStarted bool) string {
	if autoStarted {
		return "pick another address with AGENT_WORKER_LISTEN (127.0.0.1:0 picks a free port), or unset AGENT_WORKER_LISTEN: the daemon then takes a free port when " + host.DefaultListen + " is in use"
	}
	return "pick another address with --listen (port 0 picks a free one)"
}

// sparesFlag is --spares, read by spares.Parse; unset it is the
// supervisor's default (one spare per backend in use).
type sparesFlag struct{ dst **spares.Counts }

func (f sparesFlag) String() string {
	if f.dst == nil || *f.dst == nil {
		return spares.DefaultCounts.String()
	}
	return (*f.dst).String()
}

func (f sparesFlag) Set(v string) error {
	s, err := spares.Parse(v)
	if err != nil {
		return err
	}
	*f.dst = &s
	return nil
}

// runLimitsFlag is --run-limits, read by backend.ParseRunLimits; a limit
// it leaves out is runner.DefaultRunLimits'.
type runLimitsFlag struct{ dst *backend.RunLimits }

func (f runLimitsFlag) String() string {
	l := runner.DefaultRunLimits
	if f.dst != nil {
		l = f.dst.Over(l)
	}
	// "pids 4096, memory max" as the flag is written: pids=4096,memory=max
	return strings.ReplaceAll(strings.ReplaceAll(l.String(), ", ", ","), " ", "=")
}

func (f runLimitsFlag) Set(v string) error {
	l, err := backend.ParseRunLimits(v)
	if err != nil {
		return err
	}
	*f.dst = l
	return nil
}

// tlsFlag is --tls: auto (a self-signed certificate) or off.
type tlsFlag struct{ dst *host.TLSConfig }

func (f tlsFlag) String() string {
	if f.dst != nil && f.dst.Auto {
		return "auto"
	}
	return "off"
}

func (f tlsFlag) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "auto":
		f.dst.Auto = true
	case "off", "":
		f.dst.Auto = false
	default:
		return fmt.Errorf("unknown --tls %q: use auto (a self-signed certificate kept in the home) or off; for your own certificate give --tls-cert and --tls-key", v)
	}
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
