// Package telemetry sends the daemon's traces, and when asked the model
// calls' metrics, to the user's own observability backend (Jaeger, Tempo,
// Honeycomb …) over OTLP, configured by the standard OTEL_* variables the
// OpenTelemetry SDK reads itself. It is off unless an endpoint is given:
// then every span is a no-op that costs nothing. The daemon (package
// host) sets it up once; the runner, the scheduler, the triggers and the
// MCP server start spans through it, named after the GenAI semantic
// conventions (spans.go, calls.go), and the runner hands it each model
// call a plugin reported (a chat span and the gen_ai.client.* metrics,
// metrics.go).
package telemetry
