package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracingRows: what exporting traces costs (issue 46), each pair two
// fresh daemons side by side, one with tracing off and one exporting to
// an OTLP sink in the bench's process, called in turn with the order
// swapped every round (the goals, 0.02 ms and 5 %, are smaller than what
// a shared two-core machine drifts between two rows measured a minute
// apart): a channel_send's MCP round trip, then a mock run's CPU, the
// daemon's and its plugin process's.
func (b *bench) tracingRows(ctx context.Context) error {
	sink := newOTLPSink()
	defer sink.Close()

	n := b.n(10_000, 200)
	step("channel_send, one outside agent, tracing off and on, alternating")
	pair, err := startTracingPair(ctx, b.cfg, "trace-mcp", sink)
	if err != nil {
		return err
	}
	var sessions [2]*mcp.ClientSession
	for i, d := range pair {
		url, tokens, err := externalAgents(ctx, d.client, "bench", "s", 2)
		if err != nil {
			return err
		}
		if sessions[i], err = goSession(ctx, url, tokens[0]); err != nil {
			return err
		}
		defer sessions[i].Close()
	}
	send := func(i int) (time.Duration, error) {
		t0 := time.Now()
		res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "@s1 ping"}})
		took := time.Since(t0)
		if err == nil && res.IsError {
			err = fmt.Errorf("channel_send: %v", text(res))
		}
		return took, err
	}
	exported := sink.spans.Load()
	stopProfile := pair[1].profile(ctx, b.cfg.profileFile("tracing")) // the traced daemon's
	lat, cpu, err := alternatePair(pair, n, 200, send)
	stopProfile()
	if err != nil {
		return fmt.Errorf("channel_send: %w", err)
	}
	if err := sink.waitFor(exported + int64(n)); err != nil { // each call is a span: tracing was on
		return err
	}
	off50, off99 := percentiles(lat[0])
	on50, on99 := percentiles(lat[1])
	b.t.add(row{what: "`channel_send`, MCP round trip, tracing on (OTLP http/protobuf to a local sink)", ours: us(on50, on99),
		ceiling: fmt.Sprintf("tracing off, same run: %s; on − off: %+.3f ms at p50, %+.3f ms at p99; daemon CPU per call %.3f ms on, %.3f ms off",
			us(off50, off99), msf(on50-off50), msf(on99-off99), msf(cpu[1]/time.Duration(n)), msf(cpu[0]/time.Duration(n))),
		ts: b.cannot("no traces"), goal: "≤ 0.02 ms over tracing off",
		method: fmt.Sprintf("Two fresh daemons and homes started together, one with no OTLP endpoint (tracing off) and one with `OTEL_EXPORTER_OTLP_ENDPOINT` "+
			"at a sink in the bench's own process that takes every OTLP/HTTP export and discards it (http/protobuf; the sink's CPU is the bench's, not the daemon's); "+
			"on each, one outside agent's go-sdk MCP session; %d `channel_send` calls (each mentioning a second outside agent) on each after 200 of warm-up, "+
			"one at a time, alternating between the daemons and swapping which goes first every round; each call on the traced daemon is an `execute_tool` span, "+
			"checked to reach the sink. Daemon CPU: its user+system time from `/proc` over the stretch, over the calls.", n)})
	for _, d := range pair {
		d.stop(ctx)
	}

	runs := b.n(500, 10)
	step("mock runs, cold start, tracing off and on, alternating")
	pair, err = startTracingPair(ctx, b.cfg, "trace-run", sink, b.cfg.sparesOff...)
	if err != nil {
		return err
	}
	defer pair[0].stop(ctx)
	defer pair[1].stop(ctx)
	var repliers [2]*replier
	for i, d := range pair {
		if repliers[i], err = newReplier(ctx, d.client, nil, "echo"); err != nil {
			return err
		}
		defer repliers[i].close()
	}
	exported = sink.spans.Load()
	round := func(i int) (time.Duration, error) { return repliers[i].round(ctx) }
	lat, cpu, err = alternatePair(pair, runs, 5, round)
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	if err := sink.waitFor(exported + int64(runs)); err != nil {
		return err
	}
	off50, off99 = percentiles(lat[0])
	on50, on99 = percentiles(lat[1])
	perOff, perOn := cpu[0]/time.Duration(runs), cpu[1]/time.Duration(runs)
	b.t.add(row{what: "a mock run's CPU (daemon and plugin process), tracing on", ours: fmt.Sprintf("%s ms per run (mention → reply %s)", ms(perOn), latText(on50, on99)),
		ceiling: fmt.Sprintf("tracing off, same run: %s ms per run (mention → reply %s); on − off: %+.1f %%", ms(perOff), latText(off50, off99),
			100*(perOn.Seconds()-perOff.Seconds())/perOff.Seconds()),
		ts: b.cannot("no traces"), goal: "≤ 5 % over tracing off",
		method: fmt.Sprintf("Two fresh daemons and homes started together with `--spares 0` (every run starts its plugin process and the daemon reaps it), "+
			"tracing off and on as in the row above; on each a mock agent that answers a mention with a message (its run: the plugin process, the run's MCP session, "+
			"`channel_send`, the run's record; traced, its `invoke_agent` and `execute_tool` spans); %d mention → reply rounds on each after 5 of warm-up, one at a time, "+
			"each after the previous run ended, alternating between the daemons and swapping which goes first every round. CPU: the daemon's user+system time and "+
			"its reaped children's (`/proc`, utime+stime and cutime+cstime) from before the first round until its last plugin process is reaped, over the runs.", runs)})
	return nil
}

// startTracingPair starts two fresh daemons with flags, the first with
// tracing off, the second exporting to sink.
func startTracingPair(ctx context.Context, cfg config, name string, sink *otlpSink, flags ...string) ([2]*daemon, error) {
	var pair [2]*daemon
	// The variables the SDK reads, empty (unset) for the first: the
	// bench's own environment must not turn its tracing on.
	off := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_METRICS_EXPORTER="}
	on := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_METRICS_EXPORTER="}
	for i, env := range [][]string{off, on} {
		home, err := tempHome(cfg, fmt.Sprintf("%s-%d", name, i))
		if err != nil {
			return pair, err
		}
		d, err := startDaemonEnv(ctx, cfg, home, env, flags...)
		if err != nil {
			if pair[0] != nil {
				pair[0].stop(ctx)
			}
			return pair, err
		}
		pair[i] = d
	}
	return pair, nil
}

// alternatePair times f on each daemon of pair (f(0), f(1)) n times after
// warm untimed rounds, swapping which goes first every round, and
// returns each one's times and its CPU over the timed rounds: its own and
// its reaped children's, counted once its last child is reaped.
func alternatePair(pair [2]*daemon, n, warm int, f func(i int) (time.Duration, error)) ([2][]time.Duration, [2]time.Duration, error) {
	var lat [2][]time.Duration
	var cpu0, cpu [2]time.Duration
	for i := range n + warm {
		if i == warm {
			for k, d := range pair {
				self, children, err := cpuTimes(d.pid())
				if err != nil {
					return lat, cpu, err
				}
				cpu0[k] = self + children
			}
		}
		for j := range pair {
			k := (i + j) % len(pair) // off first in even rounds, on first in odd ones
			took, err := f(k)
			if err != nil {
				return lat, cpu, fmt.Errorf("tracing %s: %w", [2]string{"off", "on"}[k], err)
			}
			if i >= warm {
				lat[k] = append(lat[k], took)
			}
		}
	}
	for k, d := range pair {
		if err := waitReaped(d.pid()); err != nil {
			return lat, cpu, err
		}
		self, children, err := cpuTimes(d.pid())
		if err != nil {
			return lat, cpu, err
		}
		cpu[k] = self + children - cpu0[k]
	}
	return lat, cpu, nil
}

// waitReaped waits until pid has no run's process left (a run's plugin
// process is counted in the daemon's children's CPU once reaped); the
// documents provider's process lives as long as the daemon.
func waitReaped(pid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		var kids []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, kid := range strings.Fields(string(b)) {
				cmdline, _ := os.ReadFile("/proc/" + kid + "/cmdline")
				if !strings.Contains(string(cmdline), "agent-worker-docs-") {
					kids = append(kids, kid)
				}
			}
		}
		if len(kids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon %d still has child processes %v after 10 s", pid, kids)
		}
		time.Sleep(5 * time.Millisecond) // another process's state; not what is measured
	}
}

// otlpSink is an OTLP/HTTP collector that takes every export and
// discards it, counting the spans of the traces' exports (decoded with
// the OTLP protocol's own Go types) so the bench knows tracing was on.
type otlpSink struct {
	*httptest.Server
	spans atomic.Int64
}

func newOTLPSink() *otlpSink {
	s := &otlpSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in coltracepb.ExportTraceServiceRequest
		if r.URL.Path == "/v1/traces" && proto.Unmarshal(body, &in) == nil {
			for _, rs := range in.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					s.spans.Add(int64(len(ss.Spans)))
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty Export…ServiceResponse
	}))
	return s
}

// waitFor waits until the sink has counted at least n spans (the
// exporter sends a batch every second).
func (s *otlpSink) waitFor(n int64) error {
	deadline := time.Now().Add(15 * time.Second)
	for s.spans.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("the OTLP sink got %d spans, want at least %d: the traced daemon did not export", s.spans.Load(), n)
		}
		time.Sleep(10 * time.Millisecond) // the exporter's batches; not what is measured
	}
	return nil
}

// msf is d in milliseconds, for differences.
func msf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
