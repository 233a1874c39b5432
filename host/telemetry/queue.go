package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Queue sizes: a run makes tens of spans, a busy team hundreds a minute;
// what a collector cannot take in that time is dropped, never waited for.
const (
	defaultQueueSize = 2048
	maxBatch         = 512
	defaultInterval  = time.Second
)

// queue is the span processor between the runs and the exporter: a
// bounded buffer that never blocks the span's owner (a full queue drops
// the span and counts it) and one goroutine that exports in batches. It
// replaces the SDK's batch processor, which drops silently, so that
// /metrics can say how many spans were lost. Ending a span only appends
// it under a lock: the exporting goroutine is woken by its ticker or by a
// full batch, never once per span (a wake-up per span cost channel_send
// a measurable part of its round trip).
type queue struct {
	exp      sdktrace.SpanExporter
	log      hclog.Logger
	interval time.Duration
	size     int

	mu  sync.Mutex
	buf []sdktrace.ReadOnlySpan

	ready   chan struct{} // a batch is full (buffered, one slot)
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	exported, dropped atomic.Uint64
	// failing is set while exports fail, so a down collector is logged
	// once when it goes and once when it is back, not at every batch.
	failing atomic.Bool
}

var _ sdktrace.SpanProcessor = (*queue)(nil)

func newQueue(exp sdktrace.SpanExporter, size int, interval time.Duration, log hclog.Logger) *queue {
	if size <= 0 {
		size = defaultQueueSize
	}
	if interval <= 0 {
		interval = defaultInterval
	}
	q := &queue{exp: exp, log: log, interval: interval, size: size, ready: make(chan struct{}, 1),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go q.loop()
	return q
}

// OnStart does nothing: spans are exported when they end.
func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, or drops it when the queue is full.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.mu.Lock()
	if len(q.buf) >= q.size {
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	q.buf = append(q.buf, s)
	n := len(q.buf)
	q.mu.Unlock()
	if n == min(maxBatch, q.size) {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

func (q *queue) loop() {
	defer close(q.done)
	tick := time.NewTicker(q.interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			q.export(q.take())
		case <-q.ready:
			q.export(q.take())
		case done := <-q.flushes:
			q.export(q.take())
			close(done)
		case <-q.stop:
			q.export(q.take())
			return
		}
	}
}

// take empties the queue and returns what it held.
func (q *queue) take() []sdktrace.ReadOnlySpan {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.buf
	q.buf = nil
	return batch
}

// export sends batch in chunks of maxBatch. The exporter bounds each
// call by OTEL_EXPORTER_OTLP_TIMEOUT (10 s by default); a failed chunk is
// counted as dropped.
func (q *queue) export(batch []sdktrace.ReadOnlySpan) {
	for i := 0; i < len(batch); i += maxBatch {
		chunk := batch[i:min(i+maxBatch, len(batch))]
		if err := q.exp.ExportSpans(context.Background(), chunk); err != nil {
			q.dropped.Add(uint64(len(chunk)))
			if !q.failing.Swap(true) {
				q.log.Warn("export traces: spans are dropped until the collector answers", "error", err)
			}
		} else {
			q.exported.Add(uint64(len(chunk)))
			if q.failing.Swap(false) {
				q.log.Info("export traces: the collector answers again")
			}
		}
	}
}

// ForceFlush exports what is queued now, or gives up when ctx ends.
func (q *queue) ForceFlush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case q.flushes <- done:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued, within ctx, and closes the exporter.
func (q *queue) Shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
	}
	return q.exp.Shutdown(ctx)
}
