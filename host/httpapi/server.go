package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/agents"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/triggers"
	"github.com/agent-worker/agent-worker/host/workflows"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// Scheduler is what the handlers ask of the scheduler.
type Scheduler interface {
	Ask(ctx context.Context, t api.Target, message string, onEvent func(backend.Event)) (api.RunResult, error)
	Resume(ctx context.Context, key store.AgentKey) error
	Pause(ctx context.Context, key store.AgentKey) error
	CancelAgent(ctx context.Context, key store.AgentKey) (string, error)
	CancelRun(ctx context.Context, runID string) error
}

// Agents registers and removes agents (host/agents.Registry).
type Agents interface {
	Create(ctx context.Context, spec api.AgentSpec) (store.Agent, error)
	Delete(ctx context.Context, key store.AgentKey) error
	SetSchedule(ctx context.Context, key store.AgentKey, schedule, prompt string) error
}

// Workflows starts and stops workflow instances (host/workflows.Manager).
type Workflows interface {
	Start(ctx context.Context, req api.StartWorkflow) (workflows.Started, error)
	Stop(ctx context.Context, scope store.Scope, cancel bool) error
	Pause(ctx context.Context, scope store.Scope) error
	Resume(ctx context.Context, scope store.Scope) error
	// Accept applies the edit of the file that waits for its owner.
	Accept(ctx context.Context, scope store.Scope) error
	Progress(ctx context.Context, wf store.Workflow) (*api.Progress, error)
	// Idle is Progress.Idle alone, cheap while the team works.
	Idle(ctx context.Context, scope store.Scope) (bool, error)
}

// Catalog lists the installed plugins (host/catalog.Catalog).
type Catalog interface {
	agents.Catalog
	List() []api.Plugin
	Dirs() []string
	Refresh(ctx context.Context)
}

// Runs follows runs in flight (host/runner.Supervisor).
type Runs interface {
	// WatchRun: changed gets a value when new events of run id are
	// stored, ended closes once its end is recorded; live is false when
	// the run is not in flight, and stop releases the watch.
	WatchRun(id string) (changed, ended <-chan struct{}, stop func(), live bool)
	// SpareStats counts each backend's warm spares and cold starts.
	SpareStats() map[string]api.SpareStats
}

// Hooks serves webhook deliveries (host/triggers.Service).
type Hooks interface {
	Deliver(ctx context.Context, d triggers.Delivery) (api.HookResult, error)
}

// Console is the web console (host/console.Server).
type Console interface {
	// Handler serves /console/ for logged-in sessions as a client of
	// inner, the routes behind the bearer token.
	Handler(inner http.Handler) http.Handler
	// NewLogin mints a one-time login link under the daemon's baseURL.
	NewLogin(baseURL string) api.ConsoleLogin
}

// Deps are the services the HTTP API calls; the handlers hold no state of
// their own beyond them.
type Deps struct {
	DB        *store.DB
	Team      *team.Service
	Sched     Scheduler
	Agents    Agents
	Workflows Workflows
	Catalog   Catalog
	// Hooks serves POST /hooks/{workflow}/{name}, which is authenticated by
	// the delivery's signature instead of the bearer token.
	Hooks Hooks
	// MCP serves /mcp; it authenticates agents with their own tokens.
	MCP http.Handler
	// Token is the bearer token of every other route.
	Token string
	// Info is the daemon's published address, for the MCP URL it hands out.
	Info func() api.DaemonInfo
	// Listen is the bound address, Home the daemon's home, StartedAt and
	// Now its clock: what /health reports.
	Listen    string
	Home      string
	StartedAt time.Time
	// ListenFallback is why Listen is not the default address, for
	// /health; nil when it is the address the daemon was given.
	ListenFallback *api.ListenFallback
	Now            func() time.Time
	// Shutdown asks the daemon to stop (POST /shutdown); Stopping is
	// closed when it does, which ends the event streams.
	Shutdown func()
	Stopping <-chan struct{}
	// Metrics serves GET /metrics (Prometheus text format), behind the
	// token like every route but /mcp.
	Metrics http.Handler
	Log     hclog.Logger
	// Runs follows live runs for GET /runs/{id}/events.
	Runs Runs
	// Console serves /console/; nil serves none.
	Console Console
	// Worktrees serves /worktrees: the agents' git worktrees.
	Worktrees Worktrees
	// Efforts serves /skills and /efforts; nil answers them unavailable.
	Efforts Efforts
	// Gate decides live sessions' tool calls (POST /agents/{target}/gate);
	// nil allows them all.
	Gate Gate
	// Member is this daemon's id in a cluster ("" on the embedded file);
	// Lease how long a silent member stays one.
	Member string
	Lease  time.Duration
	// Sandbox is the run sandbox as status shows it.
	Sandbox api.SandboxInfo
	// Processes is how a run's processes end with it, for status.
	Processes api.ProcessControl
	// Notify serves /notifications and /notify/test (host/notify).
	Notify Notifications
	// Doctor answers GET /doctor from the daemon's own process (its
	// environment's variable names, its disk); nil serves none.
	Doctor func(context.Context) contract.Doctor
	// LoopProblems are the daemon's vital loops that stopped and wait to
	// restart, as status lists them; nil: none.
	LoopProblems func() []string
	// Ready answers GET /readyz: nil when the store answers a cheap
	// query. Nil asks DB (store.DB.Ping); tests hand in a failing one.
	Ready func(context.Context) error
	// Replays serves POST /runs/{id}/replay; nil answers it unavailable.
	Replays Replays
}

// Server is the HTTP API over the daemon's services.
type Server struct {
	db          *store.DB
	team        *team.Service
	sched       Scheduler
	agents      Agents
	wfs         Workflows
	catalog     Catalog
	hooks       Hooks
	mcp         http.Handler
	metrics     http.Handler
	token       string
	info        func() api.DaemonInfo
	listen      string
	home        string
	startedAt   time.Time
	now         func() time.Time
	stopServing func()
	stop        <-chan struct{}
	log         hclog.Logger
	runs        Runs
	console     Console
	worktrees   Worktrees
	efforts     Efforts
	gate        Gate
	member      string
	lease       time.Duration
	sandbox     api.SandboxInfo
	processes   api.ProcessControl
	notify      Notifications
	doctor      func(context.Context) contract.Doctor
	fallback    *api.ListenFallback
	loops       func() []string
	ready       func(context.Context) error
	replays     Replays
	// unreachable is since when GET /health has found the store
	// unreachable; nil while it answers.
	unreachable atomic.Pointer[time.Time]
}

// New returns the whole HTTP API as one handler: /mcp, and every other
// route behind the daemon's bearer token, each request logged.
func New(d Deps) http.Handler {
	h := &Server{db: d.DB, team: d.Team, sched: d.Sched, agents: d.Agents, wfs: d.Workflows, catalog: d.Catalog,
		mcp: d.MCP, metrics: d.Metrics, token: d.Token, info: d.Info, listen: d.Listen, home: d.Home, startedAt: d.StartedAt, now: d.Now,
		stopServing: d.Shutdown, stop: d.Stopping, log: d.Log,
		runs: d.Runs, hooks: d.Hooks, console: d.Console, worktrees: d.Worktrees, efforts: d.Efforts, member: d.Member, lease: d.Lease, sandbox: d.Sandbox, processes: d.Processes}
	h.notify, h.doctor = d.Notify, d.Doctor
	h.gate = d.Gate
	h.fallback = d.ListenFallback
	h.loops = d.LoopProblems
	h.ready = d.Ready
	h.replays = d.Replays
	if h.ready == nil && d.DB != nil {
		h.ready = d.DB.Ping
	}
	return h.routes(d.Log)
}
