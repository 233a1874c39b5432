package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// load is one measured stretch of MCP calls.
type load struct {
	calls    int
	elapsed  time.Duration
	p50, p99 time.Duration
	cpu      time.Duration   // the server process's CPU time over the stretch
	cpus     []time.Duration // with several servers (goLoadSpread), each one's part of cpu
}

func (l load) perSecond() float64 { return float64(l.calls) / l.elapsed.Seconds() }

// cpuPerCall is the server's CPU time per call in milliseconds.
func (l load) cpuPerCall() float64 {
	return float64(l.cpu.Microseconds()) / 1000 / float64(l.calls)
}

// percentiles sorts lat and returns its p50 and p99.
func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// bearerTransport adds a bearer token to every request. Each client has its
// own connection pool, wide enough that no call waits for a connection.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(r)
}

func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     time.Minute,
	}
}

// goSession opens an MCP session with the go-sdk's client, the way a
// backend of ours does.
func goSession(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-worker-bench", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient:           &http.Client{Transport: bearerTransport{token, newTransport()}},
		DisableStandaloneSSE: true}
	return client.Connect(ctx, tr, nil)
}

// goLoad makes calls tool calls from len(tokens) concurrent go-sdk clients,
// one session each, after a warm-up of 200 calls per client; args gives the
// arguments of client i's call. pid, when not 0, is the server process
// whose CPU time is measured over the stretch.
func goLoad(ctx context.Context, url string, tokens []string, calls int, tool string, pid int,
	args func(client int) map[string]any) (load, error) {
	urls := make([]string, len(tokens))
	for i := range urls {
		urls[i] = url
	}
	return goLoadSpread(ctx, urls, tokens, calls, tool, []int{pid}, args)
}

// goLoadSpread is goLoad with a server of each client's own (client i
// calls urls[i] with tokens[i]), as the members of a cluster are; the CPU
// time measured is the sum of pids'.
func goLoadSpread(ctx context.Context, urls, tokens []string, calls int, tool string, pids []int,
	args func(client int) map[string]any) (load, error) {
	sessions := make([]*mcp.ClientSession, len(tokens))
	for i, tok := range tokens {
		s, err := goSession(ctx, urls[i], tok)
		if err != nil {
			return load{}, fmt.Errorf("connect client %d: %w", i, err)
		}
		defer s.Close()
		sessions[i] = s
	}
	call := func(i int) error {
		res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args(i)})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: tool error %v", tool, res.Content)
		}
		return err
	}
	run := func(per int, lat [][]time.Duration) error {
		var wg sync.WaitGroup
		errs := make([]error, len(sessions))
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					t0 := time.Now()
					if err := call(i); err != nil {
						errs[i] = err
						return
					}
					if lat != nil {
						lat[i] = append(lat[i], time.Since(t0))
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(200, nil); err != nil {
		return load{}, fmt.Errorf("warm-up: %w", err)
	}
	per := calls / len(sessions)
	lat := make([][]time.Duration, len(sessions))
	for i := range lat {
		lat[i] = make([]time.Duration, 0, per)
	}
	cpu0 := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu0[i], _ = cpuTime(pid)
	}
	start := time.Now()
	if err := run(per, lat); err != nil {
		return load{}, err
	}
	l := load{calls: per * len(sessions), elapsed: time.Since(start)}
	for i, pid := range pids {
		cpu1, err := cpuTime(pid)
		if err != nil { // gone, or pid 0: counts nothing
			cpu1 = cpu0[i]
		}
		l.cpus = append(l.cpus, cpu1-cpu0[i])
		l.cpu += cpu1 - cpu0[i]
	}
	var all []time.Duration
	for _, ls := range lat {
		all = append(all, ls...)
	}
	l.p50, l.p99 = percentiles(all)
	return l, nil
}

// The bare servers: the go-sdk's own MCP server with one no-op tool and
// nothing of ours in it, in its cheapest configuration (stateful: a session
// kept across requests, as our daemon keeps them; JSON responses) and in
// its stateless one (a temporary session set up for every request).
const (
	bareStateful  = "stateful"
	bareStateless = "stateless"
)

// serveBare serves the go-sdk's bare no-op server in mode (bareStateful or
// bareStateless), prints its address and serves until killed.
func serveBare(mode string) error {
	if mode != bareStateful && mode != bareStateless {
		return fmt.Errorf("-bare-server %q: use %s or %s", mode, bareStateful, bareStateless)
	}
	type in struct {
		Message string `json:"message"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "noop", Description: "does nothing"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: mode == bareStateless, JSONResponse: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, h)
}
