package telemetry

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.27.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config says where traces go. The zero Config with no OTEL_* endpoint in
// the environment is off.
type Config struct {
	// Endpoint is the daemon's --otlp-endpoint: a URL such as
	// http://localhost:4318 that wins over the environment's.
	Endpoint string
	// Exporter, when set, replaces OTLP (tests: tracetest's in-memory
	// exporter) and turns tracing on.
	Exporter sdktrace.SpanExporter
	// QueueSize bounds the spans waiting for export (2048 when 0);
	// Interval is how often they are sent (1 s when 0).
	QueueSize int
	Interval  time.Duration
	Log       hclog.Logger
	// Metrics is the daemon's --otlp-metrics: export the gen_ai.client.*
	// histograms over OTLP, as OTEL_METRICS_EXPORTER=otlp asks.
	Metrics bool
	// MetricReader, when set, replaces OTLP metrics (tests: the SDK's
	// ManualReader) and turns metrics on.
	MetricReader sdkmetric.Reader
	// CaptureContent is --otel-capture-content: chat and tool spans carry
	// the messages, as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
	// asks.
	CaptureContent bool
	// Getenv reads the environment for the settings the daemon reads
	// itself (os.Getenv when nil); the SDK's exporters read theirs.
	Getenv func(string) string
}

// SpanExporter is where spans go: OTLP, or a test's in-memory exporter.
type SpanExporter = sdktrace.SpanExporter

// MetricReader is where metrics go: OTLP, or a test's manual reader.
type MetricReader = sdkmetric.Reader

// Telemetry is the daemon's tracing: a tracer provider and the queue in
// front of its exporter, or a no-op tracer when off.
type Telemetry struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // nil when off
	queue    *queue
	endpoint string
	flag     string // --otlp-endpoint

	// latest: the newest GenAI names (OTEL_SEMCONV_STABILITY_OPT_IN);
	// content: messages on spans (CaptureContent).
	latest, content bool
	// meters and the histograms of model calls; nil when metrics are off.
	meters   *sdkmetric.MeterProvider
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
}

// instrumentation names the daemon's tracer in every span.
const instrumentation = "github.com/agent-worker/agent-worker"

// Off is tracing switched off: every span is a no-op.
func Off() *Telemetry {
	return &Telemetry{tracer: noop.NewTracerProvider().Tracer(instrumentation)}
}

// New sets tracing up from cfg and the process's environment, which the
// SDK's exporters and resource read themselves (OTEL_EXPORTER_OTLP_*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER). Off
// (no endpoint) is not an error; a protocol it does not know is. Metrics
// are set up the same way when asked for (metrics.go).
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	log := cfg.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	t := Off()
	t.latest = latestOptIn(getenv("OTEL_SEMCONV_STABILITY_OPT_IN"))
	t.content = cfg.CaptureContent || strings.EqualFold(strings.TrimSpace(getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")), "true")
	exp, endpoint := cfg.Exporter, ""
	if exp == nil {
		if endpoint = Endpoint(cfg.Endpoint, getenv); endpoint != "" {
			var err error
			if exp, err = otlpExporter(ctx, cfg.Endpoint, getenv); err != nil {
				return nil, err
			}
		}
	}
	reader, err := metricReader(ctx, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if exp == nil && reader == nil {
		return t, nil
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("agent-worker")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithHost())
	if err != nil {
		log.Warn("trace resource", "error", err) // partial: what was read is used
	}
	if reader != nil {
		t.setMetrics(reader, res)
	}
	if exp != nil {
		q := newQueue(exp, cfg.QueueSize, cfg.Interval, log)
		// The sampler is the SDK's from OTEL_TRACES_SAMPLER and
		// OTEL_TRACES_SAMPLER_ARG (parent-based always-on when unset).
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q), sdktrace.WithResource(res))
		t.tracer, t.provider, t.queue, t.endpoint, t.flag = tp.Tracer(instrumentation, trace.WithSchemaURL(semconv.SchemaURL)), tp, q, endpoint, cfg.Endpoint
	}
	return t, nil
}

// Endpoint is where traces go: flag, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// else OTEL_EXPORTER_OTLP_ENDPOINT; "" is off.
func Endpoint(flag string, getenv func(string) string) string {
	return cmp.Or(flag, getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

// Protocol is the OTLP protocol the environment asks for: grpc or
// http/protobuf (the specification's default).
func Protocol(getenv func(string) string) (string, error) {
	p := cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	switch p {
	case "grpc", "http/protobuf":
		return p, nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: the daemon exports traces over grpc or http/protobuf", p)
}

// otlpExporter builds the exporter for the protocol asked for. The
// exporter reads the endpoint, headers, timeout, compression and
// certificates from the OTEL_EXPORTER_OTLP_* variables itself; a flag's
// endpoint is given as an option, which wins.
func otlpExporter(ctx context.Context, flag string, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto, err := Protocol(getenv)
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		var opts []otlptracegrpc.Option
		if flag != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(flag))
		}
		return otlptracegrpc.New(ctx, opts...) // connects lazily: a collector that is down is no error here
	}
	var opts []otlptracehttp.Option
	if flag != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(flag, "/")+"/v1/traces"))
	}
	return otlptracehttp.New(ctx, opts...)
}

// On says whether spans are exported.
func (t *Telemetry) On() bool { return t != nil && t.provider != nil }

// Endpoint is where spans go ("" when off or exported to a test's exporter).
func (t *Telemetry) Endpoint() string { return t.endpoint }

// Tracer starts the daemon's spans.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return Off().tracer
	}
	return t.tracer
}

// Spans says how many spans were exported and how many dropped (queue
// full or the collector unreachable), for /metrics.
func (t *Telemetry) Spans() (exported, dropped uint64) {
	if !t.On() {
		return 0, 0
	}
	return t.queue.exported.Load(), t.queue.dropped.Load()
}

// Flush exports the spans that ended and the metrics so far, within ctx.
func (t *Telemetry) Flush(ctx context.Context) error {
	var err error
	if t.On() {
		err = t.provider.ForceFlush(ctx)
	}
	if t != nil && t.meters != nil {
		err = errors.Join(err, t.meters.ForceFlush(ctx))
	}
	return err
}

// Close exports what is left, within ctx, and stops the exporters.
func (t *Telemetry) Close(ctx context.Context) error {
	var err error
	if t.On() {
		err = t.provider.Shutdown(ctx)
	}
	if t != nil && t.meters != nil {
		err = errors.Join(err, t.meters.Shutdown(ctx))
	}
	return err
}

// propagator is W3C trace context: the traceparent a message, a run's
// environment (TRACEPARENT) and a plugin carry.
var propagator = propagation.TraceContext{}

// Traceparent is ctx's span as a W3C traceparent header value, "" when
// ctx has no sampled or recording span.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	// What propagator.Inject writes as traceparent, without the map it
	// writes into: every message a run sends asks (bench: a third of what
	// tracing adds to a channel_send).
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte // 00-<32 hex>-<16 hex>-<2 hex>
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// FromTraceparent is the span context a traceparent names (invalid for ""
// or a malformed value), as a remote parent.
func FromTraceparent(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
}

// WithTraceparent is ctx with tp's span as its remote parent; ctx as it is
// when tp names none.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	sc := FromTraceparent(tp)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
