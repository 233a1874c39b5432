// Package telemetry sends the daemon's traces to the user's own tracing
// backend (Jaeger, Tempo, Honeycomb …) over OTLP, configured by the
// standard OTEL_* variables the OpenTelemetry SDK reads itself. It is off
// unless an endpoint is given: then every span is a no-op that costs
// nothing. The daemon (package host) sets it up once; the runner, the
// scheduler and the MCP server start spans through the Tracer it returns,
// named after the GenAI semantic conventions (spans.go).
package telemetry
