package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// probe is GET path on the daemon without its token, as a service
// manager or a load balancer calls it: the status and the body.
func (c *cli) probe(path string) (int, string) {
	c.t.Helper()
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(d.Port) + path)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The probes answer without a token; /readyz is 503 while PostgreSQL is
// down and 200 again once it is back, while /healthz stays 200 (issue 45,
// item 7).
func TestE2EReadyzDuringAPostgreSQLOutage(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t) // its own: the test pauses it
	dsn, err := pg.CreateDatabase(t.Context(), "readyz")
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	c.startLoggedDaemon("AGENT_WORKER_STORE=" + dsn) // its log is printed if the test fails
	// A run through the job queue: the daemon is fully up (a store lost
	// while the queue is still starting stops the daemon, as a failed
	// start does).
	c.ok("new", "bob", "--backend", "mock", "--config", mockConfig(t, map[string]any{"result": "pong"}))
	c.ok("send", "bob", "ping")
	c.waitFor("bob's reply", func() bool { return strings.Contains(c.ok("peek"), "[bob] pong") })
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := c.probe(path); code != http.StatusOK || body != "ok\n" {
			t.Errorf("GET %s without a token = %d %q, want 200 \"ok\\n\"", path, code, body)
		}
	}
	if err := pg.Pause(); err != nil {
		t.Fatal(err)
	}
	if code, body := c.probe("/readyz"); code != http.StatusServiceUnavailable || body != "unavailable\n" {
		t.Errorf("GET /readyz with PostgreSQL down = %d %q, want 503 \"unavailable\\n\" and no details", code, body)
	}
	if code, _ := c.probe("/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz with PostgreSQL down = %d, want 200: the daemon still serves", code)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("/readyz to answer 200 once PostgreSQL is back", func() bool {
		code, _ := c.probe("/readyz")
		return code == http.StatusOK
	})
}
