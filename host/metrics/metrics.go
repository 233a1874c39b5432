package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// namespace prefixes every metric of the daemon's own.
const namespace = "agent_worker"

// scrapeTimeout bounds the store read behind the inbox-depth gauge, so a
// stuck database makes one scrape incomplete rather than hanging it.
const scrapeTimeout = 5 * time.Second

// Buckets, in seconds. Runs last from a second (mock) to many minutes (a
// CLI agent at work); tool calls and store writes take milliseconds.
var (
	runBuckets   = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
	waitBuckets  = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600}
	fastBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5}
	outcomeOK    = "ok"
	outcomeError = "error"
)

// InboxDepths reads every agent's unread count at once
// (store.DB.InboxDepths).
type InboxDepths func(ctx context.Context) (map[store.AgentKey]int, error)

// LiveAgents reads the agents that exist and are not stopped: the series
// of any other agent or workflow are gone from the next scrape (Prune).
type LiveAgents func(ctx context.Context) ([]store.AgentKey, error)

// Metrics are the daemon's metrics in a registry of their own. Its
// methods are what the parts report through; all are safe for concurrent
// use and return at once.
type Metrics struct {
	reg *prometheus.Registry
	log hclog.Logger

	runs           *prometheus.CounterVec
	runDuration    *prometheus.HistogramVec
	runWait        *prometheus.HistogramVec
	toolCalls      *prometheus.CounterVec
	toolDuration   *prometheus.HistogramVec
	pluginsLive    *prometheus.GaugeVec
	pluginRestarts *prometheus.CounterVec
	sparesLive     *prometheus.GaugeVec
	spares         *prometheus.CounterVec
	sandboxRefused *prometheus.CounterVec
	tokens         *prometheus.CounterVec
	cost           *prometheus.CounterVec
	storeWrites    prometheus.Histogram

	// byWorkflow are the vectors with a workflow label, which Prune
	// empties of a workflow that is gone.
	byWorkflow []*prometheus.MetricVec
	// live, when set, says which agents still exist (Prune).
	live LiveAgents
	// seenMu guards seen: the workflow label values series were made for
	// and, per workflow, the agent label values of sandboxRefused.
	seenMu sync.Mutex
	seen   map[string]map[string]bool
}

// New builds the registry: the daemon's metrics, the inbox-depth gauge
// read from inbox at each scrape, and the Go runtime and process
// collectors.
func New(inbox InboxDepths, log hclog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "runs_total",
			Help: "Agent runs that ended, by backend and how they ended (succeeded, failed, cancelled, timed_out)."},
			[]string{"backend", "state"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "run_duration_seconds",
			Help: "How long agent runs took, from the start of the run to its recorded end.", Buckets: runBuckets},
			[]string{"backend"}),
		runWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "run_wait_seconds",
			Help: "Time from the oldest unread message a run is shown to the start of that run.", Buckets: waitBuckets},
			[]string{"backend"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "mcp_tool_calls_total",
			Help: "Calls of the daemon's MCP tools, by tool and outcome (ok, error)."},
			[]string{"tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "mcp_tool_duration_seconds",
			Help: "How long the daemon's MCP tools took to answer, by tool.", Buckets: fastBuckets},
			[]string{"tool"}),
		pluginsLive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "plugin_processes",
			Help: "Plugin processes the daemon runs now, by kind (backend: one per run in flight; docs: long-lived providers)."},
			[]string{"kind"}),
		pluginRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "plugin_restarts_total",
			Help: "Long-lived plugin processes started again after they died or their binary was replaced, by kind and plugin."},
			[]string{"kind", "plugin"}),
		sparesLive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "spare_processes",
			Help: "Warm spare backend processes waiting for a run now, by backend."},
			[]string{"backend"}),
		spares: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "spare_events_total",
			Help: "Warm spares by backend and event: started, taken (by a run), killed (unused: binary changed, backend idle, daemon stopping), and cold_start (a run that found no spare ready)."},
			[]string{"backend", "event"}),
		sandboxRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "sandbox_refusals_total",
			Help: "What runs' sandboxes refused (a path or TCP port outside the agent's policy), by workflow and agent, as the runs' transcripts report it."},
			[]string{"workflow", "agent"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "tokens_total",
			Help: "Model tokens the runs reported, by workflow and direction (input, output)."},
			[]string{"workflow", "direction"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "cost_usd_total",
			Help: "Cost in US dollars the runs reported, by workflow."},
			[]string{"workflow"}),
		storeWrites: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "store_write_duration_seconds",
			Help: "How long each store write took, waiting for the write lock included.", Buckets: fastBuckets}),
	}
	m.seen = map[string]map[string]bool{}
	m.byWorkflow = []*prometheus.MetricVec{m.sandboxRefused.MetricVec, m.tokens.MetricVec, m.cost.MetricVec}
	// Both plugin kinds show from the first scrape, 0 until one starts.
	m.pluginsLive.WithLabelValues("backend")
	m.pluginsLive.WithLabelValues("docs")
	m.reg.MustRegister(m.runs, m.runDuration, m.runWait, m.toolCalls, m.toolDuration, m.pluginsLive,
		m.pluginRestarts, m.sparesLive, m.spares, m.sandboxRefused, m.tokens, m.cost, m.storeWrites,
		inboxCollector{src: inbox},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format. A collector
// that fails (the store unreadable) is logged and its metrics left out;
// the rest are still served.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      errorLog{m.log},
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.Prune(r.Context())
		h.ServeHTTP(w, r)
	})
}

// ForgetGone makes each scrape first delete the series of agents and
// workflows that live no longer lists: a daemon that runs many short
// teams does not serve, and keep in memory, a series per team it ever
// ran. Call it once, before the daemon serves.
func (m *Metrics) ForgetGone(live LiveAgents) { m.live = live }

// Prune deletes the series of every agent that is no longer live (removed,
// or stopped: taken out of its workflow's file or its workflow stopped)
// and of every workflow none of whose agents is. A counter of an agent or
// workflow that comes back starts again from zero, which Prometheus reads
// as a reset. A failed read prunes nothing.
func (m *Metrics) Prune(ctx context.Context) {
	if m.live == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	keys, err := m.live(ctx)
	if err != nil {
		m.log.Debug("metrics: list live agents", "error", err)
		return
	}
	workflows := map[string]map[string]bool{}
	for _, k := range keys {
		if workflows[k.Workflow] == nil {
			workflows[k.Workflow] = map[string]bool{}
		}
		workflows[k.Workflow][k.Name] = true
	}
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	for wf, agents := range m.seen {
		live, ok := workflows[wf]
		if !ok {
			for _, v := range m.byWorkflow {
				v.DeletePartialMatch(prometheus.Labels{"workflow": wf})
			}
			delete(m.seen, wf)
			continue
		}
		for a := range agents {
			if !live[a] {
				m.sandboxRefused.DeleteLabelValues(wf, a)
				delete(agents, a)
			}
		}
	}
}

// saw records that a series names workflow (and agent, when not "").
func (m *Metrics) saw(workflow, agent string) {
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	agents := m.seen[workflow]
	if agents == nil {
		agents = map[string]bool{}
		m.seen[workflow] = agents
	}
	if agent != "" {
		agents[agent] = true
	}
}

// RunEnded counts a run that ended: its state, duration, and the tokens
// and cost it reported, under its workflow.
func (m *Metrics) RunEnded(backendName, workflow string, state api.RunState, d time.Duration, u backend.Usage) {
	m.runs.WithLabelValues(backendName, string(state)).Inc()
	m.runDuration.WithLabelValues(backendName).Observe(d.Seconds())
	if u.InputTokens > 0 || u.OutputTokens > 0 || u.CostUSD > 0 {
		m.saw(workflow, "")
	}
	if u.InputTokens > 0 {
		m.tokens.WithLabelValues(workflow, "input").Add(float64(u.InputTokens))
	}
	if u.OutputTokens > 0 {
		m.tokens.WithLabelValues(workflow, "output").Add(float64(u.OutputTokens))
	}
	if u.CostUSD > 0 {
		m.cost.WithLabelValues(workflow).Add(u.CostUSD)
	}
}

// RunWaited records how long the oldest message a run is shown waited
// for it.
func (m *Metrics) RunWaited(backendName string, d time.Duration) {
	m.runWait.WithLabelValues(backendName).Observe(max(d, 0).Seconds())
}

// ToolCalled counts one MCP tool call and how long it took.
func (m *Metrics) ToolCalled(tool string, d time.Duration, err error) {
	outcome := outcomeOK
	if err != nil {
		outcome = outcomeError
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// PluginStarted and PluginStopped keep the count of live plugin processes
// of a kind.
func (m *Metrics) PluginStarted(kind string) { m.pluginsLive.WithLabelValues(kind).Inc() }

// PluginStopped: see PluginStarted.
func (m *Metrics) PluginStopped(kind string) { m.pluginsLive.WithLabelValues(kind).Dec() }

// PluginRestarted counts a long-lived plugin started again.
func (m *Metrics) PluginRestarted(kind, name string) {
	m.pluginRestarts.WithLabelValues(kind, name).Inc()
}

// SpareEvent counts a backend's warm spare events and keeps its live
// gauge: a start adds a spare, a take or a kill ends one.
func (m *Metrics) SpareEvent(backendName string, e api.SpareEvent) {
	m.spares.WithLabelValues(backendName, string(e)).Inc()
	switch e {
	case api.SpareStarted:
		m.sparesLive.WithLabelValues(backendName).Inc()
	case api.SpareTaken, api.SpareKilled:
		m.sparesLive.WithLabelValues(backendName).Dec()
	}
}

// SandboxRefused counts one refusal a run of agent@workflow reported.
func (m *Metrics) SandboxRefused(workflow, agent string) {
	m.saw(workflow, agent)
	m.sandboxRefused.WithLabelValues(workflow, agent).Inc()
}

// StoreWrite records one store write's latency (store.Options.ObserveWrite).
func (m *Metrics) StoreWrite(d time.Duration) { m.storeWrites.Observe(d.Seconds()) }

// inboxCollector reads every agent's inbox depth from the store at scrape
// time: the store is the one source of truth, so there is no second count
// to drift from it.
type inboxCollector struct{ src InboxDepths }

var inboxDesc = prometheus.NewDesc(namespace+"_inbox_depth",
	"Unread messages waiting in each agent's inbox.", []string{"agent", "workflow", "tag"}, nil)

func (c inboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- inboxDesc }

func (c inboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	depths, err := c.src(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(inboxDesc, err)
		return
	}
	for k, n := range depths {
		ch <- prometheus.MustNewConstMetric(inboxDesc, prometheus.GaugeValue, float64(n), k.Name, k.Workflow, k.Tag)
	}
}

// errorLog sends promhttp's errors to the daemon's log.
type errorLog struct{ log hclog.Logger }

func (e errorLog) Println(v ...any) { e.log.Warn("metrics scrape", "error", v) }

// Traces registers the counts of spans exported to and dropped before the
// OTLP collector (host/telemetry): a collector that is down or too slow
// shows here, never in the runs. spans reads both; call Traces once.
func (m *Metrics) Traces(spans func() (exported, dropped uint64)) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "trace_spans_exported_total",
			Help: "Trace spans the OTLP collector accepted."},
			func() float64 { e, _ := spans(); return float64(e) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "trace_spans_dropped_total",
			Help: "Trace spans dropped: the export queue was full or the OTLP collector did not accept them in time."},
			func() float64 { _, d := spans(); return float64(d) }))
}
