package host

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/runspec"
	warmspares "github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// BenchmarkMCPChannelSend measures channel_send through the MCP server over
// real HTTP, 8 agents sending concurrently, each message mentioning another.
func BenchmarkMCPChannelSend(b *testing.B) {
	th := startHost(b, b.TempDir())
	const clients = 8
	sessions := make([]*agentSession, clients)
	for i := range sessions {
		sessions[i] = th.join(b, fmt.Sprintf("s%d@bench", i))
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)-1) % clients
		s := sessions[i]
		for pb.Next() {
			res, err := s.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send",
				Arguments: map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%clients)}})
			if err != nil || res.IsError {
				b.Fatalf("send: %v %+v", err, res)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// BenchmarkMyInbox1M measures my_inbox through MCP over HTTP with 1,000,000
// messages from 100 agents in the store; each inbox holds ~10,000 unread.
// It reports p50 and p99 latency.
func BenchmarkMyInbox1M(b *testing.B) {
	th := startHost(b, b.TempDir())
	const agents, total, batch = 100, 1_000_000, 20_000
	ctx := context.Background()
	sessions := make([]*agentSession, agents)
	for i := range sessions {
		sessions[i] = th.join(b, fmt.Sprintf("a%03d@big", i))
	}
	seedStart := time.Now()
	for n := 0; n < total; n += batch {
		ms := make([]store.NewMessage, batch)
		for j := range ms {
			from, to := (n+j)%agents, (n+j+1)%agents
			ms[j] = store.NewMessage{Workflow: "big", Tag: "main", Sender: fmt.Sprintf("a%03d", from),
				Content: fmt.Sprintf("@a%03d message %d", to, n+j), Recipients: []string{fmt.Sprintf("a%03d", to)}}
		}
		if _, err := th.DB().AppendMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d messages in %s", total, time.Since(seedStart).Round(time.Millisecond))
	var lat []time.Duration
	for i := 0; b.Loop(); i++ { // b.Loop runs the seeding above only once
		s := sessions[i%agents]
		t0 := time.Now()
		res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: "my_inbox"})
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("my_inbox: %v %+v", err, res)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkPluginRun measures the overhead of one supervised run: spawn the
// mock plugin, handshake over gRPC, a run that fetches its context with 3
// MCP calls (my_inbox, channel_read, team_doc_read) and returns a result,
// then exit and cleanup. It reports p50 and p99.
func BenchmarkPluginRun(b *testing.B) {
	th, _ := pluginHost(b, runner.SupervisorConfig{})
	mockAgent(b, th, "bench", map[string]any{"result": "ok"})
	agent, err := th.DB().GetAgent(context.Background(), store.AgentKey{Name: "bench", Workflow: "global", Tag: "main"})
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		out, err := th.sup.Run(context.Background(), runspec.RunSpec{Agent: agent, Attempt: 1})
		lat = append(lat, time.Since(t0))
		if err != nil || out.Result != "ok" {
			b.Fatalf("run: %+v, %v", out, err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkWakeLatency measures from a message committed (Send returns) to
// the backend's Run entered in a fresh plugin process, p50/p99.
func BenchmarkWakeLatency(b *testing.B) {
	th, _ := pluginHost(b, runner.SupervisorConfig{}, noPoll)
	mockAgent(b, th, "alice", map[string]any{"result": "ok"})
	ev := watchEvents(b, th)
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "alice", Message: "ping"}); err != nil {
			b.Fatal(err)
		}
		ev.next("alice's run", runOf(team.EventRunStarted, "alice"))
		lat = append(lat, time.Since(t0))
		ev.next("alice's run to end", runOf(team.EventRunFinished, "alice"))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkPingPong measures team throughput in messages per second: two
// agents answering each other's mention with one ball in play (every
// reply a fresh run in a fresh process, one after the other), and 10
// agents in a ring, each mentioning the next, with 10 balls in play;
// counted over a 5-second window once the first reply is in.
func BenchmarkPingPong(b *testing.B) {
	for _, agents := range []int{2, 10} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			const window = 5 * time.Second
			for b.Loop() {
				th, _ := pluginHost(b, runner.SupervisorConfig{}, noPoll)
				for i := range agents {
					mockAgent(b, th, fmt.Sprintf("p%d", i), map[string]any{"reply": fmt.Sprintf("@p%d ping", (i+1)%agents)})
				}
				ev := watchEvents(b, th)
				balls := agents
				if agents == 2 {
					balls = 1
				}
				for i := range balls {
					if _, err := th.client().Send(context.Background(), api.SendRequest{Target: fmt.Sprintf("p%d", i), Message: "serve"}); err != nil {
						b.Fatal(err)
					}
				}
				ev.next("the first reply", func(e team.Event) bool {
					return e.Kind == team.EventMessage && e.Message.Sender != team.SenderUser
				})
				n, end := 0, time.After(window)
			count:
				for {
					select {
					case e := <-ev.sub.C:
						if e.Kind == team.EventMessage {
							n++
						}
					case <-end:
						break count
					}
				}
				if n == 0 {
					b.Fatal("no message in the window: the agents stopped answering")
				}
				b.ReportMetric(float64(n)/window.Seconds(), "msgs/s")
				th.stop(b)
			}
		})
	}
}

// BenchmarkPluginRunSpares measures one supervised run of the mock as
// BenchmarkPluginRun does, with --spares 0 (cold: every run starts its
// process) and with a warm spare ready before each run (the wait for the
// replacement spare is outside the timing). It reports p50 and p99.
func BenchmarkPluginRunSpares(b *testing.B) {
	zero := warmspares.Counts{}
	for name, sc := range map[string]runner.SupervisorConfig{"cold": {Spares: &zero}, "spare-ready": {}} {
		b.Run(name, func(b *testing.B) {
			th, _ := pluginHost(b, sc)
			mockAgent(b, th, "bench", map[string]any{"result": "ok"})
			agent, err := th.DB().GetAgent(context.Background(), store.AgentKey{Name: "bench", Workflow: "global", Tag: "main"})
			if err != nil {
				b.Fatal(err)
			}
			run := func() time.Duration {
				t0 := time.Now()
				out, err := th.sup.Run(context.Background(), runspec.RunSpec{Agent: agent, Attempt: 1})
				if err != nil || out.Result != "ok" {
					b.Fatalf("run: %+v, %v", out, err)
				}
				return time.Since(t0)
			}
			run() // the backend's first run brings its spare
			var lat []time.Duration
			for b.Loop() {
				if sc.Spares == nil {
					b.StopTimer()
					testkit.WaitFor(b, "a warm spare", func() bool { return th.sup.SpareStats()["mock"].Live == 1 })
					b.StartTimer()
				}
				lat = append(lat, run())
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkMCPCallServer is one channel_send as the daemon serves it, with
// no client in the process: the request an SDK client sends on its session,
// handed to the daemon's HTTP handler (token check, MCP, the team's write
// path, the store's commit). Its allocs/op are the daemon's own per call.
func BenchmarkMCPCallServer(b *testing.B) {
	th := startHost(b, b.TempDir())
	ctx := context.Background()
	c := th.client()
	tg, err := api.ParseAgentTarget("s0@bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"s0", "s1"} {
		if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: name, Workflow: tg.Workflow, Tag: tg.Tag, Backend: "external"}); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := c.MCPConfig(ctx, tg)
	if err != nil {
		b.Fatal(err)
	}
	s := connectMCP(b, cfg.URL, cfg.Token, "s0") // initializes a session as a client does
	body := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"channel_send","arguments":{"message":"@s1 ping"}}}`)
	req := func() *http.Request {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+cfg.Token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		r.Header.Set("Mcp-Session-Id", s.sess.ID())
		return r
	}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		th.srv.Handler.ServeHTTP(w, req())
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"seq":`)) {
			b.Fatalf("channel_send: %d %s", w.Code, w.Body)
		}
	}
}
