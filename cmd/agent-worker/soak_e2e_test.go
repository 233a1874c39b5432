package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
)

// soakEnv turns the soak test on; it runs for minutes, so the ordinary
// suite skips it. `make soak` sets it.
const soakEnv = "AGENT_WORKER_SOAK"

// Soak bounds. The fd slack covers connections the test itself holds open
// (its event stream, one keep-alive); RSS may grow by the heap settling
// after the warm-up but not by anything proportional to the load (20,000
// calls leaking even 4 KiB each would be 80 MiB).
const (
	soakMCPCalls        = 20_000
	soakRuns            = 200
	soakMCPClients      = 8
	soakCallsPerSession = 100 // each client reconnects after this many calls
	soakFDSlack         = 8
	soakRSSSlack        = 64 << 20
)

// The probe's load check, kept: 20,000 MCP calls from 8 concurrent outside
// agents (reconnecting every 100 calls) and 200 mock-plugin runs, against a
// real daemon; its open file descriptors and resident memory, measured
// after a warm-up and again after the load, must stay flat. Not a timed
// assertion: it fails only on growth. Run it with `make soak`.
func TestE2ESoakFDsAndMemoryStayFlat(t *testing.T) {
	if os.Getenv(soakEnv) == "" {
		t.Skipf("soak test: set %s=1 (or run `make soak`) to run 20,000 MCP calls and 200 runs against a daemon", soakEnv)
	}
	c := newCLI(t)
	// No warm spares: the daemon's own fds and memory are measured with
	// no plugin process waiting (settle waits for none).
	daemon := c.startDaemon("AGENT_WORKER_SPARES=0")
	pid := daemon.Process.Pid
	c.ok("new", "echo", "--backend", "mock")
	// The outside agents' MCP endpoints, minted once (tokens outlive sessions).
	type endpoint struct {
		agent, url string
		hc         *http.Client
	}
	endpoints := make([]endpoint, soakMCPClients)
	for i := range endpoints {
		e := endpoint{agent: fmt.Sprintf("p%d", i)}
		c.ok("new", e.agent, "--backend", "external")
		e.url, e.hc = c.mcpEndpoint(e.agent)
		endpoints[i] = e
	}
	client := c.client()

	// run_finished and run_failed of echo, from the daemon's event stream.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan api.RunEventInfo, soakRuns)
	connected := make(chan struct{})
	streamDone := make(chan error, 1)
	go func() {
		streamDone <- client.Follow(ctx, "@global", 1, api.FollowHandlers{
			Connected: func() { close(connected) },
			Run: func(kind string, r api.RunEventInfo) error {
				if r.Agent == "echo" || strings.HasPrefix(r.Agent, "echo@") {
					if kind == "run_failed" {
						t.Errorf("run %s failed: %s", r.RunID, r.Error)
					}
					if kind != "run_started" {
						finished <- r
					}
				}
				return nil
			},
		})
	}()
	select {
	case <-connected:
	case err := <-streamDone:
		t.Fatalf("event stream: %v", err)
	}

	// runs mentions echo n times, one run at a time, each awaited.
	runs := func(n int) {
		for i := range n {
			if _, err := client.Send(ctx, api.SendRequest{Target: "@global", Message: fmt.Sprintf("@echo ping %d", i)}); err != nil {
				t.Fatalf("send: %v", err)
			}
			select {
			case <-finished:
			case <-time.After(2 * time.Minute):
				t.Fatalf("run %d of echo did not finish in 2 minutes", i+1)
			}
		}
	}
	// calls makes n MCP calls spread over the outside agents.
	var callErrs atomic.Int64
	calls := func(n int) {
		var wg sync.WaitGroup
		for _, e := range endpoints {
			wg.Add(1)
			go func() {
				defer wg.Done()
				soakClient(t, e.agent, e.url, e.hc, n/soakMCPClients, &callErrs)
			}()
		}
		wg.Wait()
	}

	// Warm-up: let pools, caches and the heap reach their working size.
	runs(10)
	calls(2_000)
	fdsBefore, rssBefore := settle(t, pid, -1)
	t.Logf("after warm-up: %d open fds, VmRSS %d KiB", fdsBefore, rssBefore>>10)

	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); calls(soakMCPCalls) }()
	runs(soakRuns)
	wg.Wait()
	t.Logf("load: %d MCP calls (%d tool errors) and %d runs in %s", soakMCPCalls, callErrs.Load(), soakRuns, time.Since(start).Round(time.Second))
	if n := callErrs.Load(); n > 0 {
		t.Errorf("%d MCP calls failed", n)
	}

	// 10 warm-up runs + 200: every one is in GET /runs, finished.
	var l api.RunList
	getJSON(t, c, "/runs?agent=echo&limit=1000", &l)
	done := 0
	for _, r := range l.Runs {
		if r.State == "succeeded" {
			done++
		}
	}
	if len(l.Runs) != soakRuns+10 || done != len(l.Runs) {
		t.Errorf("GET /runs lists %d runs of echo, %d succeeded; want %d, all succeeded", len(l.Runs), done, soakRuns+10)
	}

	fdsAfter, rssAfter := settle(t, pid, fdsBefore+soakFDSlack)
	t.Logf("after the load: %d open fds (%+d), VmRSS %d KiB (%+d KiB)", fdsAfter, fdsAfter-fdsBefore, rssAfter>>10, (rssAfter-rssBefore)>>10)
	if fdsAfter > fdsBefore+soakFDSlack {
		t.Errorf("open fds grew from %d to %d (more than %d): a leak", fdsBefore, fdsAfter, soakFDSlack)
	}
	if rssAfter > rssBefore+soakRSSSlack {
		t.Errorf("VmRSS grew from %d KiB to %d KiB (more than %d MiB): a leak", rssBefore>>10, rssAfter>>10, soakRSSSlack>>20)
	}
	cancel()
	<-streamDone
}

// soakClient makes n MCP calls as agent at endpoint, a mix of reads and
// writes, reconnecting every soakCallsPerSession calls.
func soakClient(t *testing.T, agent, endpoint string, hc *http.Client, n int, errs *atomic.Int64) {
	ctx := context.Background()
	mcpClient := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil)
	mix := []struct {
		tool string
		args func(i int) map[string]any
	}{
		{"channel_send", func(i int) map[string]any { return map[string]any{"message": fmt.Sprintf("%s soak %d", agent, i)} }},
		{"channel_read", func(int) map[string]any { return map[string]any{"limit": 20} }},
		{"my_inbox", func(int) map[string]any { return nil }},
		{"team_members", func(int) map[string]any { return nil }},
		{"my_status_set", func(i int) map[string]any { return map[string]any{"task": fmt.Sprintf("call %d", i)} }},
		{"team_doc_write", func(i int) map[string]any {
			return map[string]any{"file": agent + ".md", "content": fmt.Sprintf("call %d\n", i)}
		}},
		{"team_doc_read", func(int) map[string]any { return map[string]any{"file": agent + ".md"} }},
		{"team_doc_list", func(int) map[string]any { return nil }},
	}
	var sess *mcp.ClientSession
	for i := range n {
		if i%soakCallsPerSession == 0 {
			if sess != nil {
				sess.Close()
			}
			var err error
			if sess, err = mcpClient.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil); err != nil {
				t.Errorf("%s: connect: %v", agent, err)
				errs.Add(1)
				return
			}
		}
		m := mix[i%len(mix)]
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: m.tool, Arguments: m.args(i)})
		if err != nil || res.IsError {
			if errs.Add(1) <= 5 {
				t.Errorf("%s: %s: %v %+v", agent, m.tool, err, res)
			}
		}
	}
	if sess != nil {
		sess.Close()
	}
}

// settle waits until no mock plugin process is left (the soak test is not
// parallel, so they are the daemon's) and closes the test's idle
// connections, then returns the daemon's open fds and VmRSS in bytes. With
// fdLimit >= 0 it also waits, up to a deadline, for the fds to drop to that
// limit, since the daemon closes a connection a moment after the client
// lets go; it returns what it measured last.
func settle(t *testing.T, pid, fdLimit int) (fds, rss int) {
	t.Helper()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fds, rss = procFDs(t, pid), procRSS(t, pid)
		if (fdLimit < 0 || fds <= fdLimit) && processWithExe(t, mockPlugin) == 0 {
			return fds, rss
		}
		if time.Now().After(deadline) {
			return fds, rss
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func procFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("count the daemon's fds: %v", err)
	}
	return len(entries)
}

// procRSS is VmRSS of /proc/<pid>/status, in bytes.
func procRSS(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the daemon's status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// getJSON is one authenticated GET against the daemon, for routes the api
// client does not parameterise.
func getJSON(t *testing.T, c *cli, path string, out any) {
	t.Helper()
	client := c.client()
	req, _ := http.NewRequest(http.MethodGet, client.BaseURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+client.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(out) != nil {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
}
