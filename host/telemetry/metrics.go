package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.27.0"
)

// The histograms' buckets, as the GenAI conventions advise them.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// metricReader is where the metrics go: a test's reader, or OTLP when
// OTEL_METRICS_EXPORTER=otlp or --otlp-metrics asks, sent every
// OTEL_METRIC_EXPORT_INTERVAL (60 s) by the SDK's periodic reader; nil
// when not asked. The collector is the traces' unless
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT says otherwise.
func metricReader(ctx context.Context, cfg Config, getenv func(string) string) (sdkmetric.Reader, error) {
	if cfg.MetricReader != nil {
		return cfg.MetricReader, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); {
	case cfg.Metrics || e == "otlp":
	case e == "" || e == "none" || e == "prometheus":
		return nil, nil // the daemon's /metrics is Prometheus's, always served
	default:
		return nil, fmt.Errorf("OTEL_METRICS_EXPORTER %q: the daemon exports metrics over otlp, or none (its Prometheus /metrics is always served)", e)
	}
	if cmp.Or(cfg.Endpoint, getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) == "" {
		return nil, fmt.Errorf("metrics over OTLP need a collector: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) or --otlp-endpoint")
	}
	proto := cmp.Or(getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	var exp sdkmetric.Exporter
	var err error
	switch proto {
	case "grpc":
		var opts []otlpmetricgrpc.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(cfg.Endpoint))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	case "http/protobuf":
		var opts []otlpmetrichttp.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/v1/metrics"))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: the daemon exports metrics over grpc or http/protobuf", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	return sdkmetric.NewPeriodicReader(exp), nil
}

// setMetrics makes the meter provider and the two GenAI client
// histograms each model call is recorded in (Chat).
func (t *Telemetry) setMetrics(r sdkmetric.Reader, res *resource.Resource) {
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithResource(res))
	m := t.meters.Meter(instrumentation, metric.WithSchemaURL(semconv.SchemaURL))
	// The instruments' names are constants: an error here is a bug the
	// SDK reports by returning a working no-op instrument.
	t.tokens, _ = m.Int64Histogram(semconv.GenAiClientTokenUsageName, metric.WithUnit(semconv.GenAiClientTokenUsageUnit),
		metric.WithDescription(semconv.GenAiClientTokenUsageDescription), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	t.duration, _ = m.Float64Histogram(semconv.GenAiClientOperationDurationName, metric.WithUnit(semconv.GenAiClientOperationDurationUnit),
		metric.WithDescription(semconv.GenAiClientOperationDurationDescription), metric.WithExplicitBucketBoundaries(durationBuckets...))
}

// MetricsOn says whether model calls are recorded as metrics.
func (t *Telemetry) MetricsOn() bool { return t != nil && t.meters != nil }
