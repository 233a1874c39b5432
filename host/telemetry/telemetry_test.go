package telemetry

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOffWithoutEndpoint(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tel, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.On() {
		t.Fatal("tracing is on with no endpoint set")
	}
	_, span := tel.Tracer().Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("a span of tracing switched off records")
	}
	span.End()
	if e, d := tel.Spans(); e != 0 || d != 0 {
		t.Errorf("Spans = %d, %d; want 0, 0", e, d)
	}
}

func TestEndpointAndProtocolFromEnvironment(t *testing.T) {
	tests := map[string]struct {
		flag  string
		env   map[string]string
		want  string
		proto string
	}{
		"none":         {want: "", proto: "http/protobuf"},
		"general":      {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}, want: "http://a:4318", proto: "http/protobuf"},
		"traces wins":  {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: "http://b", proto: "grpc"},
		"flag wins":    {flag: "http://f", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a"}, want: "http://f", proto: "http/protobuf"},
		"traces proto": {env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, proto: "http/protobuf"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Endpoint(tt.flag, env(tt.env)); got != tt.want {
				t.Errorf("Endpoint = %q, want %q", got, tt.want)
			}
			if got, err := Protocol(env(tt.env)); err != nil || got != tt.proto {
				t.Errorf("Protocol = %q, %v; want %q", got, err, tt.proto)
			}
		})
	}
}

func TestUnknownProtocolIsRefused(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err := New(context.Background(), Config{})
	if err == nil {
		t.Fatal("http/json accepted")
	}
	t.Log(err)
}

func TestSpansReachTheExporter(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	t.Setenv("OTEL_SERVICE_NAME", "team-a")
	tel, err := New(context.Background(), Config{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	ctx, parent := tel.Tracer().Start(context.Background(), "invoke_workflow review")
	_, child := tel.Tracer().Start(WithTraceparent(context.Background(), Traceparent(ctx)), "invoke_agent alice")
	child.End()
	parent.End()
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("exported %d spans, want 2", len(spans))
	}
	if spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() || spans[0].SpanContext.TraceID() != spans[1].SpanContext.TraceID() {
		t.Errorf("the child carried by its traceparent is not in its parent's trace: %v / %v", spans[0].Parent, spans[1].SpanContext)
	}
	if got := spans[1].Resource.Set(); !got.HasValue("service.name") {
		t.Error("no service.name")
	} else if v, _ := got.Value("service.name"); v.AsString() != "team-a" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's team-a", v.AsString())
	}
	if e, d := tel.Spans(); e != 2 || d != 0 {
		t.Errorf("Spans = %d exported, %d dropped; want 2, 0", e, d)
	}
}

// A collector nobody listens at: what could not be sent is counted as
// dropped.
func TestUnreachableCollectorDropsAndCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300") // ms: each failed export gives up after it
			tel, err := New(context.Background(), Config{})
			if err != nil {
				t.Fatal(err)
			}
			// Ending a span never waits on the exporter
			// (TestFullQueueDropsWithoutWaiting holds one forever).
			for range 10 {
				_, s := tel.Tracer().Start(context.Background(), "invoke_agent a")
				s.End()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tel.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if e, d := tel.Spans(); e != 0 || d != 10 {
				t.Errorf("Spans = %d exported, %d dropped; want 0, 10", e, d)
			}
			tel.Close(ctx)
		})
	}
}

// blockingExporter holds every export until release is closed.
type blockingExporter struct{ release chan struct{} }

func (b blockingExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	<-b.release
	return nil
}
func (b blockingExporter) Shutdown(context.Context) error { return nil }

func TestFullQueueDropsWithoutWaiting(t *testing.T) {
	exp := blockingExporter{release: make(chan struct{})}
	tel, err := New(context.Background(), Config{Exporter: exp, QueueSize: 4, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 600 { // past a batch (512) held in the exporter and the queue
		_, s := tel.Tracer().Start(context.Background(), "execute_tool x")
		s.End()
	}
	_, dropped := tel.Spans()
	close(exp.release)
	if dropped < 600-maxBatch-4 {
		t.Errorf("dropped %d spans, want at least %d", dropped, 600-maxBatch-4)
	}
	tel.Close(context.Background())
}

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := Traceparent(WithTraceparent(context.Background(), tp)); got != tp {
		t.Errorf("round trip = %q, want %q", got, tp)
	}
	// As the W3C propagator writes it, sampled or not.
	for _, want := range []string{tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"} {
		ctx := WithTraceparent(context.Background(), want)
		c := propagation.MapCarrier{}
		propagator.Inject(ctx, c)
		if got := Traceparent(ctx); got != want || got != c["traceparent"] {
			t.Errorf("Traceparent = %q, the propagator %q, want %q", got, c["traceparent"], want)
		}
	}
	if got := Traceparent(context.Background()); got != "" {
		t.Errorf("no span: Traceparent = %q, want none", got)
	}
	for _, bad := range []string{"", "nonsense", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if FromTraceparent(bad).IsValid() {
			t.Errorf("%q names a span", bad)
		}
	}
}
