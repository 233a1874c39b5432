package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// QueueLengths reads each workflow:tag's pending merge queue entries
// (store.DB.QueueLengths).
type QueueLengths func(ctx context.Context) (map[store.Scope]int, error)

// MergeQueue are the merge queue's metrics: its length, read from the
// store at each scrape, the entries that ended and how long they waited,
// and how long checks take. host/worktrees reports to it.
type MergeQueue struct {
	m      *Metrics
	ended  *prometheus.CounterVec
	waited *prometheus.HistogramVec
	checks *prometheus.HistogramVec
}

// MergeQueue registers the merge queue's metrics, the length read through
// src, and returns what the queue reports to. Call it once.
func (m *Metrics) MergeQueue(src QueueLengths) *MergeQueue {
	q := &MergeQueue{
		m: m,
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "merge_queue_entries_total",
			Help: "Merge queue entries that ended, by workflow and how (landed, failed, removed)."},
			[]string{"workflow", "state"}),
		waited: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "merge_queue_wait_seconds",
			Help: "Time from an integrate to its entry landing, failing or being removed, by workflow.", Buckets: runBuckets},
			[]string{"workflow"}),
		checks: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "merge_queue_check_duration_seconds",
			Help: "How long each check command of the merge queue ran, by workflow and outcome (ok, error).", Buckets: runBuckets},
			[]string{"workflow", "outcome"}),
	}
	m.reg.MustRegister(q.ended, q.waited, q.checks, queueCollector{src})
	m.seenMu.Lock()
	m.byWorkflow = append(m.byWorkflow, q.ended.MetricVec, q.waited.MetricVec, q.checks.MetricVec)
	m.seenMu.Unlock()
	return q
}

// QueueEnded counts an entry that ended (host/worktrees.QueueObserver).
func (q *MergeQueue) QueueEnded(workflow string, state api.QueueState, waited time.Duration) {
	q.m.saw(workflow, "")
	q.ended.WithLabelValues(workflow, string(state)).Inc()
	q.waited.WithLabelValues(workflow).Observe(waited.Seconds())
}

// CheckRan times one check command (host/worktrees.QueueObserver).
func (q *MergeQueue) CheckRan(workflow string, d time.Duration, ok bool) {
	q.m.saw(workflow, "")
	outcome := outcomeOK
	if !ok {
		outcome = outcomeError
	}
	q.checks.WithLabelValues(workflow, outcome).Observe(d.Seconds())
}

type queueCollector struct{ src QueueLengths }

var queueDesc = prometheus.NewDesc(namespace+"_merge_queue_length",
	"Merge queue entries on their way (queued, checking, landing), by workflow and tag.", []string{"workflow", "tag"}, nil)

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDesc }

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	lengths, err := c.src(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDesc, err)
		return
	}
	for s, n := range lengths {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), s.Workflow, s.Tag)
	}
}
