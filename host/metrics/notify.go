package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// DeliveryCounts reads how many notifications are in each state
// (store.DB.DeliveryCounts).
type DeliveryCounts func(ctx context.Context) (map[string]int, error)

// Notifications are the notification metrics: the outbox by state, read
// from the store at each scrape, and the attempts by event and outcome.
type Notifications struct {
	attempts *prometheus.CounterVec
}

// Notifications registers the notification metrics, the outbox read
// through src, and returns what the notifier reports attempts to. Call it
// once.
func (m *Metrics) Notifications(src DeliveryCounts) *Notifications {
	n := &Notifications{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "notify_attempts_total",
		Help: "Attempts to POST a notification to its webhook, by event and outcome (delivered, retry, failed: given up)."},
		[]string{"event", "outcome"})}
	m.reg.MustRegister(n.attempts, deliveriesCollector{src})
	return n
}

// NotifyAttempt counts one attempt (host/notify.Observer).
func (n *Notifications) NotifyAttempt(event, outcome string) {
	n.attempts.WithLabelValues(event, outcome).Inc()
}

type deliveriesCollector struct{ src DeliveryCounts }

var deliveriesDesc = prometheus.NewDesc(namespace+"_notify_deliveries",
	"Notifications in the outbox, by state (pending, delivered, failed; delivered and failed ones are kept a week).", []string{"state"}, nil)

func (c deliveriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deliveriesDesc }

func (c deliveriesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.src(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(deliveriesDesc, err)
		return
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.GaugeValue, float64(n), state)
	}
}
