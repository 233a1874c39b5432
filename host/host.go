package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/agents"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/certs"
	"github.com/agent-worker/agent-worker/host/cluster"
	"github.com/agent-worker/agent-worker/host/console"
	"github.com/agent-worker/agent-worker/host/docs"
	"github.com/agent-worker/agent-worker/host/efforts"
	"github.com/agent-worker/agent-worker/host/gate"
	"github.com/agent-worker/agent-worker/host/httpapi"
	"github.com/agent-worker/agent-worker/host/mcpserver"
	"github.com/agent-worker/agent-worker/host/mergequeue"
	"github.com/agent-worker/agent-worker/host/metrics"
	"github.com/agent-worker/agent-worker/host/notify"
	"github.com/agent-worker/agent-worker/host/replay"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/host/triggers"
	"github.com/agent-worker/agent-worker/host/workflows"
	"github.com/agent-worker/agent-worker/host/worktrees"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// DefaultListen is where the daemon serves unless told otherwise; when
// another process holds it, a daemon given no address takes a free port
// instead (clients find it through daemon.json).
const DefaultListen = "127.0.0.1:5099"

// DefaultModel is the model an sdk agent created without one gets, unless
// the daemon is configured with another (Config.DefaultModel).
const DefaultModel = "anthropic/claude-sonnet-4-5"

// Config is what the daemon is started with; zero values take the defaults.
type Config struct {
	// Home holds daemon.json, the lock, the database and logs.
	Home string
	// Store is where the daemon keeps its state: empty for the SQLite file
	// in Home, or a postgres:// URL, which several daemons may share
	// (cluster mode).
	Store string
	// CheckStore runs SQLite's full integrity_check on the file at start
	// instead of the quick_check every start runs (--check-store).
	CheckStore bool
	// Listen is host:port for the HTTP API as the user chose it (--listen,
	// AGENT_WORKER_LISTEN or a config file's listen); port 0 picks a free
	// port, and an address another process holds is an error that names
	// it. Empty is no choice: DefaultAddr, or a free port of its host
	// when that is taken (the daemon says so in its log and status).
	Listen string
	// DefaultAddr is the address of a daemon given none (default
	// DefaultListen). Only tests set it, to a port free on a busy machine.
	DefaultAddr string
	// AllowRemote lets Listen be an address other hosts can reach. The API
	// gives whoever holds the token full control, so it must be asked for,
	// with TLS or with InsecureHTTP.
	AllowRemote bool
	// TLS is --tls auto or --tls-cert/--tls-key: the API over HTTPS.
	TLS TLSConfig
	// InsecureHTTP lets AllowRemote serve plain HTTP (--insecure-http).
	InsecureHTTP bool
	// DefaultModel is the model of an sdk agent created without one
	// (default DefaultModel).
	DefaultModel string
	// PluginsDirs are searched for plugins before the defaults.
	PluginsDirs []string
	// RuntimeDir holds the plugins' private socket directories; its path
	// must stay short (unix sockets allow ~104 bytes). Default: $TMPDIR.
	RuntimeDir string
	// PluginTimeout bounds the examination of one plugin binary (start,
	// handshake, GetInfo); one that misses it is killed and listed broken.
	// Default: DefaultPluginTimeout.
	PluginTimeout time.Duration
	// Supervisor tunes run timeouts.
	Supervisor runner.SupervisorConfig
	// Scheduler tunes when agents run.
	Scheduler scheduler.Config
	// Logger is the root logger; each part logs through a Named child.
	Logger hclog.Logger
	// Now is the clock; tests inject one.
	Now func() time.Time
	// Sandbox is --sandbox: whether runs are confined where the kernel
	// can (auto, the default), required or never.
	Sandbox sandbox.Mode
	// SandboxStatus is what the kernel offers runs; nil asks it
	// (sdk/sandbox.Probe). Tests inject a kernel without Landlock.
	SandboxStatus *sb.Status
	// NoCgroups, when set, is why plugin processes get no cgroup of their
	// own (a test hook, as where cgroup v2 is not delegated): the sdk's
	// plugin processes are then child subreapers instead.
	NoCgroups string
	// LookupEnv reads the secrets of webhook triggers (their secret_env)
	// from the daemon's environment; nil is os.LookupEnv. Tests give each
	// daemon its own.
	LookupEnv func(string) (string, bool)
	// NotifyConfig is --notify-config: a YAML file of webhooks told of
	// events in every workflow (and of the cluster's); "" for none.
	NotifyConfig string
	// OTLPEndpoint is --otlp-endpoint: where traces go, over the protocol
	// OTEL_EXPORTER_OTLP_PROTOCOL names; "" leaves it to the standard
	// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT variables, and with none of
	// them set tracing is off (host/telemetry).
	OTLPEndpoint string
	// TraceExporter, when set, receives the spans instead of OTLP (tests).
	TraceExporter telemetry.SpanExporter
	// OTLPMetrics is --otlp-metrics: the model calls' gen_ai.client.*
	// histograms go to the traces' collector too, as
	// OTEL_METRICS_EXPORTER=otlp asks.
	OTLPMetrics bool
	// MetricReader, when set, receives those metrics instead (tests).
	MetricReader telemetry.MetricReader
	// CaptureContent is --otel-capture-content: chat and tool spans carry
	// the messages, as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
	// asks.
	CaptureContent bool
	// TraceURL is --trace-url: the address of a run's trace in the user's
	// tracing UI, {trace_id} replaced (the console links to it).
	TraceURL string
	// FailLoop names a vital loop ("scheduler", "workflow watcher",
	// "plugin watcher", "cluster member loop") that ends with an error as
	// soon as it starts, so that the daemon stops with that reason (a
	// test hook).
	FailLoop string
}

// The services fit the interfaces the HTTP API is built from.
var (
	_ httpapi.Scheduler  = (*scheduler.Scheduler)(nil)
	_ httpapi.Workflows  = (*workflows.Manager)(nil)
	_ httpapi.Agents     = (*agents.Registry)(nil)
	_ httpapi.Runs       = (*runner.Supervisor)(nil)
	_ httpapi.Catalog    = (*catalog.Catalog)(nil)
	_ httpapi.Hooks      = (*triggers.Service)(nil)
	_ workflows.Triggers = (*triggers.Service)(nil)

	_ workflows.Worktrees = (*worktrees.Service)(nil)
	_ runner.ProjectDirs  = (*worktrees.Service)(nil)
	_ httpapi.Worktrees   = workspaces{}
	_ mcpserver.Worktrees = workspaces{}

	_ runner.Observer    = (*metrics.Metrics)(nil)
	_ scheduler.Observer = (*metrics.Metrics)(nil)
)

// workspaces are the git workspaces as the HTTP API and the MCP server
// see them: the agents' worktrees and their merge queues.
type workspaces struct {
	*worktrees.Service
	queue *mergequeue.Service
}

func (w workspaces) Queue(ctx context.Context, scope *store.Scope, all bool) ([]tools.QueueEntry, error) {
	return w.queue.Queue(ctx, scope, all)
}

func (w workspaces) QueueEntry(ctx context.Context, id string) (tools.QueueEntry, error) {
	return w.queue.QueueEntry(ctx, id)
}

func (w workspaces) Dequeue(ctx context.Context, id, by, reason string) (tools.QueueEntry, error) {
	return w.queue.Dequeue(ctx, id, by, reason)
}

// Host is a running daemon. New acquires everything (lock, store, socket) so
// that a misconfiguration fails before Run; Run serves until its context ends
// or a client asks for shutdown; Close releases what New acquired.
type Host struct {
	cfg Config
	// tel is the daemon's tracing (off without an OTLP endpoint).
	tel *telemetry.Telemetry
	// life ends when the daemon stops (endLife): until then the writes
	// that end a run wait out a store outage.
	life      context.Context
	endLife   context.CancelFunc
	log       hclog.Logger
	db        *store.DB
	lock      *os.File
	ln        net.Listener
	srv       *http.Server
	token     string
	startedAt time.Time
	docs      *docs.DocProviders
	team      *team.Service
	mcp       *mcpserver.Server
	gate      *gate.Gate
	catalog   *catalog.Catalog
	sup       *runner.Supervisor
	cgroups   *runner.Cgroups
	sched     *scheduler.Scheduler
	wfs       *workflows.Manager
	agents    *agents.Registry
	metrics   *metrics.Metrics
	hooks     *triggers.Service
	worktrees *worktrees.Service
	queue     *mergequeue.Service
	efforts   *efforts.Service
	notify    *notify.Notifier
	// member is this daemon in a cluster (a PostgreSQL store); nil on the
	// embedded file. memberID is its id, stamped on its runs either way.
	member   *cluster.Member
	memberID string

	// cert is the API's TLS certificate (nil: plain HTTP); runsLn and
	// runsSrv are then the loopback listener runs reach /mcp on.
	cert    *certs.Cert
	runsLn  net.Listener
	runsSrv *http.Server

	// vital runs the loops the daemon stops without (Run).
	vital *vitalLoops

	stopOnce sync.Once
	stop     chan struct{} // closed by POST /shutdown

	closeOnce sync.Once
	closeErr  error
}

// New prepares a daemon on cfg.Home: it takes the home's lock (failing with a
// clear error if another daemon holds it), opens and migrates the store,
// restores agents and workflows and binds the listen address.
func New(cfg Config) (_ *Host, err error) {
	if cfg.Home == "" {
		cfg.Home = api.DefaultHome()
	}
	if cfg.DefaultAddr == "" {
		cfg.DefaultAddr = DefaultListen
	}
	// The one place a chosen address and the default part ways: only
	// the default gives way to another process (listenAPI).
	chosen := cfg.Listen != ""
	if !chosen {
		cfg.Listen = cfg.DefaultAddr
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = DefaultModel
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := checkListen(cfg); err != nil {
		return nil, err
	}
	home, err := filepath.Abs(cfg.Home)
	if err != nil {
		return nil, fmt.Errorf("home %s: %w", cfg.Home, err)
	}
	cfg.Home = home
	// The roots of runs' directories exist before any warm spare starts:
	// a spare's sandbox grants only folders that exist when it is made,
	// and a run in one made later would be refused what its policy says.
	for _, d := range []string{api.LogDir, "runs", "state", "workspaces", "worktrees"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, fmt.Errorf("create home: %w", err)
		}
	}
	h := &Host{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), startedAt: cfg.Now(), vital: newVitalLoops(cfg.Logger, cfg.FailLoop)}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()

	notifySubs, err := h.loadNotifyConfig()
	if err != nil {
		return nil, err
	}
	if h.lock, err = lockHome(home); err != nil {
		return nil, err
	}
	if err := h.loadCert(); err != nil { // under the lock: one daemon makes the home's certificate
		return nil, err
	}
	if old, err := api.ReadDaemonInfo(home); err == nil {
		// We hold the lock, so whoever wrote this file is gone.
		h.log.Warn("replacing stale daemon file", "pid", old.PID, "started_at", old.StartedAt)
	}
	if h.token, err = newToken(); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The metrics exist before the store so that its writes are timed
	// from the first; the inbox gauge reads the store only when scraped.
	h.metrics = metrics.New(func(ctx context.Context) (map[store.AgentKey]int, error) { return h.db.InboxDepths(ctx) }, h.log.Named("metrics"))
	if h.tel, err = telemetry.New(ctx, telemetry.Config{Endpoint: cfg.OTLPEndpoint, Exporter: cfg.TraceExporter,
		Metrics: cfg.OTLPMetrics, MetricReader: cfg.MetricReader, CaptureContent: cfg.CaptureContent, Log: h.log.Named("traces")}); err != nil {
		return nil, api.Errorf(api.CodeInvalid, "traces: %w", err)
	}
	if h.tel.On() {
		h.log.Info("traces exported", "endpoint", h.tel.Endpoint())
		h.metrics.Traces(h.tel.Spans)
	}
	h.metrics.ForgetGone(func(ctx context.Context) ([]store.AgentKey, error) {
		all, err := h.db.ListAgents(ctx, store.AgentFilter{})
		var live []store.AgentKey
		for _, a := range all {
			if a.State != api.AgentStopped {
				live = append(live, a.Key())
			}
		}
		return live, err
	})
	storeAt := cfg.Store
	if storeAt == "" {
		storeAt = filepath.Join(home, api.DBFile)
	}
	if h.memberID, err = memberID(home); err != nil {
		return nil, err
	}
	h.db, err = store.Open(ctx, storeAt, store.Options{Daemon: h.memberID, Logger: h.log.Named("store"), Now: cfg.Now,
		ObserveWrite: h.metrics.StoreWrite, CheckIntegrity: cfg.CheckStore})
	if err != nil {
		if store.IsPostgresURL(storeAt) {
			return nil, fmt.Errorf("%w (check --store or AGENT_WORKER_STORE)", err)
		}
		return nil, err // it names the store
	}
	if h.db.Cluster() {
		// Every member answers with the same token, so a client may talk
		// to any of them: the first member's wins.
		if h.token, err = h.db.SharedSetting(ctx, "api_token", h.token); err != nil {
			return nil, fmt.Errorf("cluster token: %w", err)
		}
	}
	if err := h.restore(ctx); err != nil {
		return nil, err
	}
	h.notify = h.newNotifier(notifySubs)
	if err := h.buildParts(ctx); err != nil {
		return nil, err
	}
	var fallback *api.ListenFallback
	if h.ln, fallback, err = listenAPI(ctx, cfg.Listen, chosen, h.log); err != nil {
		return nil, err
	}
	if h.db.Cluster() {
		if err := h.joinCluster(ctx); err != nil {
			return nil, err
		}
	}
	httpLog := h.log.Named("http")
	handler := httpapi.New(httpapi.Deps{DB: h.db, Team: h.team, Sched: h.sched, Agents: h.agents, Workflows: h.wfs, Catalog: h.catalog, Hooks: h.hooks,
		MCP: h.mcp, Worktrees: workspaces{h.worktrees, h.queue}, Efforts: h.efforts, Gate: h.gate, Token: h.token, Info: h.Info, Listen: h.ln.Addr().String(), ListenFallback: fallback, Home: home, StartedAt: h.startedAt, Now: cfg.Now,
		Shutdown: h.requestStop, Stopping: h.stop, Metrics: h.metrics.Handler(), Log: httpLog,
		Runs: h.sup, Console: console.New(console.Config{Now: cfg.Now, Log: h.log.Named("console"), TraceURL: cfg.TraceURL}),
		Member: h.clusterID(), Lease: cluster.DefaultLease, Sandbox: h.cfg.Supervisor.Sandbox.Info(), Processes: h.processControl(),
		Notify: h.notify, Doctor: h.doctor, LoopProblems: h.vital.Problems,
		Replays: replay.New(replay.Config{DB: h.db, Runner: h.sup, Catalog: h.catalog, Home: home, Log: h.log.Named("replay")})})
	h.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          httpLog.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	if h.cert != nil {
		h.srv.TLSConfig = h.cert.ServerConfig()
	}
	if err := h.listenForRuns(handler, httpLog); err != nil {
		return nil, err
	}
	return h, nil
}

// buildParts builds the daemon's parts in dependency order, each with its
// own logger, and brings back what a previous daemon left: its plugin
// processes reaped, its workflows' files watched again.
func (h *Host) buildParts(ctx context.Context) error {
	if h.cfg.RuntimeDir == "" {
		h.cfg.RuntimeDir = os.TempDir()
	}
	catalog.CleanSocketDirs(h.cfg.RuntimeDir, h.log)
	// The folders meant for drops exist for the user to find; the
	// executable's own are left as the installation made them.
	for _, d := range append(slices.Clone(h.cfg.PluginsDirs), filepath.Join(h.cfg.Home, "plugins.d")) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			h.log.Warn("create plugins dir", "dir", d, "error", err)
		}
	}
	h.catalog = catalog.NewCatalog(pluginDirs(h.cfg), catalog.VerifiedDir(h.cfg.Home), h.cfg.RuntimeDir, h.cfg.PluginTimeout, h.log.Named("plugins"))
	h.docs = docs.NewDocProviders(h.cfg.Home, h.catalog, h.metrics, h.log.Named("docs"))
	if h.db.Cluster() {
		// Documents live in the shared database too, so that every member
		// serves them: a workflow that names no provider uses postgres.
		h.docs.UseStore(h.cfg.Store)
	}
	h.team = team.New(team.Config{DB: h.db, Docs: h.docs.Resolve, Logger: h.log.Named("team"), Notify: h.notify})
	box := h.newSandbox()
	h.worktrees = worktrees.New(worktrees.Config{DB: h.db, Team: h.team, Home: h.cfg.Home, Log: h.log.Named("worktrees")})
	h.queue = mergequeue.New(mergequeue.Config{DB: h.db, Team: h.team, Worktrees: h.worktrees, Log: h.log.Named("worktrees"),
		Observer: h.metrics.MergeQueue(h.db.QueueLengths), Confine: box.Check, Member: h.clusterMemberID(), // the merge queue's checks are confined like runs
		// in cgroups like the runs' (made below, before the queue runs),
		// with a run's limits: a check runs the agents' code too
		Contain: func(cmd *exec.Cmd) (func(), func(), bool) {
			return h.cgroups.Contain(cmd, h.cfg.Supervisor.RunLimits.Over(runner.DefaultRunLimits))
		}})
	h.mcp = mcpserver.New(h.team, h.db, h.metrics.ToolCalled, h.log.Named("mcp"))
	h.mcp.Worktrees = workspaces{h.worktrees, h.queue}
	userHome, _ := os.UserHomeDir() // none: no user skills folder
	// One gate for every path (invariant 17): the plugins' gate endpoint,
	// the daemon's tools and live sessions' PreToolUse hooks ask it, and
	// runs' events are its evidence.
	h.gate = gate.New(h.db, h.log.Named("gate"))
	var err error
	if h.efforts, err = efforts.New(ctx, efforts.Config{DB: h.db, Bus: &h.team.Bus, ProjectDirs: h.worktrees, UserHome: userHome,
		Logged: h.gate.Logged, Now: h.cfg.Now, Log: h.log.Named("efforts")}); err != nil {
		return err
	}
	h.mcp.Efforts = h.efforts
	h.mcp.Gate = h.gate
	h.team.Efforts = sessionEfforts{h.gate, h.efforts} // live sessions too
	h.cfg.Supervisor.Evidence = h.gate
	h.cfg.Supervisor.Observer, h.cfg.Scheduler.Observer = h.metrics, h.metrics
	h.cfg.Scheduler.Notify = h.notify
	h.life, h.endLife = context.WithCancel(context.Background())
	h.cfg.Supervisor.Lifetime, h.cfg.Scheduler.Lifetime = h.life, h.life
	h.cfg.Supervisor.Context = h.mcp         // a run's request carries what its tools would show first
	h.cfg.Supervisor.Worktrees = h.worktrees // an agent of a git workspace runs in its worktree
	h.cfg.Supervisor.Sandbox = box
	h.cgroups = runner.NewCgroups(h.cfg.NoCgroups, h.log.Named("cgroups"))
	h.cfg.Supervisor.Cgroups = h.cgroups
	h.cfg.Supervisor.MaxRuns = h.cfg.Scheduler.MaxConcurrent // a pool grows with demand up to the run cap
	if h.cfg.Supervisor.MaxRuns <= 0 {
		h.cfg.Supervisor.MaxRuns = scheduler.DefaultMaxConcurrent()
	}
	h.cfg.Supervisor.Tracing = h.tel
	h.sup = runner.NewSupervisor(h.db, h.catalog, h.cfg.Home, h.cfg.RuntimeDir, h.runsMCPURL, h.cfg.Supervisor, h.log.Named("supervisor"))
	h.mcp.Runs = h.sup // a gated call's run waits for approval with its timeouts stopped
	if h.tel.On() {
		h.mcp.Tracer, h.mcp.RunTrace = h.tel.Tracer(), h.sup.Traceparent // a tool call's span is its run's child
	}
	h.mcp.ProjectDir = h.sup.ProjectDir // task_complete's artifacts are checked there
	if err := h.sup.Reap(ctx); err != nil {
		return fmt.Errorf("reap workers: %w", err)
	}
	h.cfg.Scheduler.Tracing = h.tel
	h.sched = scheduler.New(h.db, h.sup, h.team, h.cfg.Scheduler, h.log.Named("scheduler"))
	h.agents = &agents.Registry{DB: h.db, Catalog: h.catalog, Sched: h.sched, DefaultModel: h.cfg.DefaultModel, Forget: h.mcp.Forget,
		StateDir: func(k store.AgentKey) string { return runner.AgentStateDir(h.cfg.Home, k) }, Release: h.worktrees.Release, Log: h.log.Named("agents"),
		RequireSandbox: h.cfg.Sandbox == sandbox.Required}
	h.mcp.Spawner = h.agents // agent_spawn and agent_stop
	h.hooks = triggers.New(triggers.Config{DB: h.db, Team: h.team, LookupEnv: h.cfg.LookupEnv, Wake: h.notify.Wake, Log: h.log.Named("triggers"), Tracing: h.tel})
	h.wfs = workflows.New(workflows.Config{Member: h.clusterMemberID(), DB: h.db, Team: h.team, Sched: h.sched, Triggers: h.hooks, Worktrees: h.worktrees, Catalog: h.catalog,
		DefaultModel: h.cfg.DefaultModel, Now: h.cfg.Now, Log: h.log.Named("workflows"), Notify: h.notify,
		RequireSandbox: h.cfg.Sandbox == sandbox.Required, Tracing: h.tel})
	if err := h.wfs.Restore(ctx); err != nil {
		return fmt.Errorf("restore workflows: %w", err)
	}
	return nil
}

// reachableFromOutside says whether listen (host:port) binds anything but a
// loopback address: an empty host or 0.0.0.0 binds every interface, and a
// name counts as loopback only if all its addresses are. A malformed
// address is left for net.Listen to report.
func reachableFromOutside(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		if ips, err = net.LookupIP(host); err != nil || len(ips) == 0 {
			return false // net.Listen cannot bind it either
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return true
		}
	}
	return false
}

// pluginDirs is the search order: --plugins-dir, the executable's own
// folder (where `go install …/cmd/...` and a release archive put the
// first-party plugins, built with it), the plugins.d beside the executable
// (for <prefix>/bin/agent-worker also <prefix>/plugins.d, which is where
// `make` puts them in a checkout), then the home's plugins.d. Only files
// named agent-worker-backend-* and agent-worker-docs-* are plugins.
func pluginDirs(cfg Config) []string {
	dirs := append([]string{}, cfg.PluginsDirs...)
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		dirs = append(dirs, dir, filepath.Join(dir, "plugins.d"))
		if filepath.Base(dir) == "bin" {
			dirs = append(dirs, filepath.Join(dir, "..", "plugins.d"))
		}
	}
	dirs = append(dirs, filepath.Join(cfg.Home, "plugins.d"))
	out := dirs[:0]
	seen := map[string]bool{}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil && !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	return out
}

// restore brings back the state a previous daemon left: agents that were
// mid-run when it died are idle again (their run is gone with it).
func (h *Host) restore(ctx context.Context) error {
	n, err := h.db.ResetRunningAgents(ctx)
	if err != nil {
		return fmt.Errorf("restore agents: %w", err)
	}
	if h.db.Cluster() {
		if n, err = h.recoverOwn(ctx); err != nil {
			return fmt.Errorf("restore agents: %w", err)
		}
	}
	agents, err := h.db.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		return fmt.Errorf("restore agents: %w", err)
	}
	wfs, err := h.db.ListWorkflows(ctx)
	if err != nil {
		return fmt.Errorf("restore workflows: %w", err)
	}
	h.log.Info("restored state", "agents", len(agents), "workflows", len(wfs), "interrupted_runs", n)
	return nil
}

// Addr is the address the HTTP API listens on (useful with port 0).
func (h *Host) Addr() *net.TCPAddr { return h.ln.Addr().(*net.TCPAddr) }

// Token is the bearer token clients must send.
func (h *Host) Token() string { return h.token }

// DB is the daemon's store.
func (h *Host) DB() *store.DB { return h.db }

// newSandbox decides how runs are confined here, and says so in the log:
// a daemon that cannot confine runs must not be mistaken for one that does.
func (h *Host) newSandbox() *sandbox.Sandbox {
	mode := h.cfg.Sandbox
	if mode == "" {
		mode = sandbox.Auto
	}
	var status sb.Status
	if h.cfg.SandboxStatus != nil {
		status = *h.cfg.SandboxStatus
	} else if mode != sandbox.Off {
		status = sb.Probe()
	}
	box := sandbox.New(mode, status, h.cfg.Home)
	box.Protect(pluginDirs(h.cfg)...) // a run never writes where the daemon finds programs to execute
	switch info := box.Info(); info.State {
	case api.SandboxOn:
		h.log.Info("runs are sandboxed", "sandbox", info.Detail)
	default:
		h.log.Warn("runs are NOT sandboxed", "sandbox", info.String())
	}
	return box
}

// Info is what Run publishes as daemon.json.
func (h *Host) Info() api.DaemonInfo {
	a := h.Addr()
	ip := a.IP
	if ip.IsUnspecified() { // every interface (--allow-remote): local clients use loopback
		ip = net.IPv4(127, 0, 0, 1)
		if host, _, _ := net.SplitHostPort(h.cfg.Listen); strings.Contains(host, ":") {
			ip = net.IPv6loopback // an IPv6-only socket
		}
	}
	return h.withTLS(api.DaemonInfo{
		PID: os.Getpid(), Host: ip.String(), Port: a.Port, Token: h.token,
		StartedAt: h.startedAt.UTC(), Version: api.Version,
	})
}

// Run publishes daemon.json and serves the HTTP API until ctx is done or a
// client calls POST /shutdown, then stops serving (letting requests in
// flight finish for a few seconds) and removes daemon.json.
func (h *Host) Run(ctx context.Context) error {
	if err := api.WriteDaemonInfo(h.cfg.Home, h.Info()); err != nil {
		return err
	}
	defer h.removeDaemonFile()

	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopBG()
		h.endLife() // a run's end still waiting for the store gives up: the next start recovers it
		wg.Wait()
	}()
	wg.Go(func() { h.team.RunExpiry(bg) })
	wg.Go(func() { h.efforts.Run(bg) })
	// Attached sessions that went silent: their agents are idle again,
	// and their teams are told once.
	wg.Go(func() { team.NewStaleSessions(h.team, h.cfg.Now).Run(bg, team.StaleAfter/10) })
	// Returns the tasks whose lease was lost, first those of the runs that
	// died with the previous daemon (Reap marked them failed).
	wg.Go(func() { h.team.RunLeases(bg) })
	h.catalog.Scan(bg) // before serving, so the first run finds its plugin
	if err := h.sched.Start(bg); err != nil {
		return fmt.Errorf("start scheduler: %w", err)
	}
	// The loops without which the daemon would answer but not work: the
	// first of those that cannot start over to end with an error stops it
	// (vitalLoops).
	// The file watchers can start over: without them no edit is seen,
	// but everything else works meanwhile.
	h.vital.Go(bg, &wg, "scheduler", h.sched.Run)
	h.vital.GoRestart(bg, &wg, "workflow watcher", h.wfs.Watch)
	h.vital.GoRestart(bg, &wg, "plugin watcher", h.catalog.Watch)
	if h.member != nil {
		h.vital.Go(bg, &wg, "cluster member loop", h.member.Run)
		wg.Go(func() { h.syncAgents(bg) })
	}
	wg.Go(func() { h.sup.RunSpares(bg) })
	wg.Go(func() { h.notify.Run(bg) })    // sends the outbox, what the previous daemon left first
	wg.Go(func() { h.wfs.WatchIdle(bg) }) // the idle notifications
	wg.Go(func() { h.worktrees.Run(bg) })
	wg.Go(func() { h.queue.RunQueue(bg) }) // the merge queue, what the previous daemon left first

	serveErr := make(chan error, 2)
	go func() { serveErr <- h.serve() }()
	if h.runsSrv != nil {
		go func() { serveErr <- h.runsSrv.Serve(h.runsLn) }()
	}
	h.log.Info("daemon ready", "listen", h.ln.Addr().String(), "url", h.Info().URL(), "home", h.cfg.Home, "pid", os.Getpid())

	var err error
	select {
	case <-ctx.Done():
		h.log.Info("stopping", "reason", "signal")
	case <-h.stop:
		h.log.Info("stopping", "reason", "shutdown request")
	case err = <-serveErr:
		err = fmt.Errorf("serve http: %w", err)
	case err = <-h.vital.Stopped():
		h.log.Info("stopping", "reason", err.Error())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := h.srv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		h.log.Warn("http shutdown", "error", serr)
	}
	if h.runsSrv != nil {
		if serr := h.runsSrv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			h.log.Warn("http shutdown (runs' listener)", "error", serr)
		}
	}
	return err
}

// requestStop asks Run to return; safe to call many times.
func (h *Host) requestStop() { h.stopOnce.Do(func() { close(h.stop) }) }

func (h *Host) removeDaemonFile() {
	path := filepath.Join(h.cfg.Home, api.DaemonFile)
	if d, err := api.ReadDaemonInfo(h.cfg.Home); err == nil && d.PID != os.Getpid() {
		return // not ours; never delete another daemon's file
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		h.log.Warn("remove daemon file", "error", err)
	}
}

// Close releases the socket, the store and the lock. It is safe to call
// after a failed New and more than once.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		var errs []error
		if h.ln != nil {
			_ = h.ln.Close() // already closed after Run
		}
		if h.runsLn != nil {
			_ = h.runsLn.Close()
		}
		if h.endLife != nil {
			h.endLife()
		}
		h.cgroups.Close() // what runs left, wherever it went
		if h.docs != nil {
			errs = append(errs, h.docs.Close())
		}
		if h.db != nil {
			errs = append(errs, h.db.Close())
		}
		if h.tel != nil {
			// The last spans get a moment, never the daemon's exit.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if err := h.tel.Close(ctx); err != nil {
				h.log.Warn("export the last traces", "error", err)
			}
			cancel()
		}
		errs = append(errs, unlockHome(h.lock))
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// processControl is how a run's processes end with it and are limited,
// for status.
func (h *Host) processControl() api.ProcessControl {
	pc := h.cgroups.Mechanism()
	pc.Limits, pc.Unenforced = h.cgroups.LimitsInForce(h.sup.Limits())
	return pc
}
