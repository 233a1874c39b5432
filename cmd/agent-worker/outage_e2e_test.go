package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// startLoggedDaemon is startDaemon with the daemon's log readable while it
// runs.
func (c *cli) startLoggedDaemon(extraEnv ...string) *testkit.Buffer {
	c.t.Helper()
	cmd := exec.Command(binary, "daemon")
	cmd.Env = append(c.env(), extraEnv...)
	logs := &testkit.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		c.stopDaemon()
		_ = cmd.Wait()
		if c.t.Failed() {
			c.t.Logf("daemon log:\n%s", logs.String())
		}
	})
	c.waitFor("daemon.json of pid "+strconv.Itoa(cmd.Process.Pid), func() bool {
		d, err := api.ReadDaemonInfo(c.home)
		return err == nil && d.PID == cmd.Process.Pid
	})
	return logs
}

// agentState is an agent's state as info --json shows it.
func (c *cli) agentState(name string) api.AgentState {
	c.t.Helper()
	var a api.Agent
	if err := json.Unmarshal([]byte(c.ok("info", name, "--json")), &a); err != nil {
		c.t.Fatalf("info %s --json: %v", name, err)
	}
	return a.State
}

// A run that ends while PostgreSQL is down does not strand its agent: the
// writes that end it wait for the store, and once it is back the agent is
// idle, its run recorded as ended with its token dead, and the next
// message gets a run, all without restarting the daemon (issue 27, item 1).
func TestE2ERunEndingDuringAStoreOutageFreesItsAgent(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t) // its own: the test stops it
	dsn, err := pg.CreateDatabase(t.Context(), "runend")
	if err != nil {
		t.Fatal(err)
	}
	db := connect(t, dsn)
	c := newCLI(t)
	logs := c.startLoggedDaemon("AGENT_WORKER_STORE=" + dsn)
	gate := filepath.Join(t.TempDir(), "go")
	c.ok("new", "slow", "--backend", "mock", "--config", mockConfig(t,
		map[string]any{"shell": "while [ ! -e " + gate + " ]; do sleep 0.05; done"},
		map[string]any{"result": "done"}))
	c.ok("send", "slow", "first")
	var runID string
	c.waitFor("slow's run to start", func() bool {
		var l api.RunList
		if json.Unmarshal([]byte(c.ok("runs", "--json")), &l) != nil || len(l.Runs) == 0 || l.Runs[0].State != api.RunRunning {
			return false
		}
		runID = l.Runs[0].ID
		return true
	})

	endpoint, hc := c.mcpEndpoint("slow")
	db.conn.Close(t.Context())
	if err := pg.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the run to end with the store down", func() bool {
		return strings.Contains(logs.String(), "record run end")
	})
	if r := c.run("send", "slow", "during"); r.code != api.ExitUnavailable {
		t.Errorf("send during the outage: exit %d, stderr %q; want %d", r.code, r.stderr, api.ExitUnavailable)
	}
	// An MCP client's request is unavailable too, not an internal error.
	resp, err := hc.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("MCP request during the outage: %s, want 503", resp.Status)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}

	db = connect(t, dsn)
	c.waitFor("slow to be idle again", func() bool { return c.agentState("slow") == api.AgentIdle })
	if n := db.count(`SELECT count(*) FROM runs WHERE id = $1 AND state = 'running'`, runID); n != 0 {
		t.Errorf("run %s still recorded as running after the store came back", runID)
	}
	if n := db.count(`SELECT count(*) FROM agent_tokens WHERE run_id = $1 AND revoked_at = 0`, runID); n != 0 {
		t.Errorf("run %s ended but %d of its tokens are alive", runID, n)
	}
	// The message the failed settle left unread is answered, and so is a
	// new one: the agent works again.
	c.ok("send", "slow", "after")
	c.waitFor("slow's reply to what came after the outage", func() bool {
		var a api.Agent
		if err := json.Unmarshal([]byte(c.ok("info", "slow", "--json")), &a); err != nil || a.InboxDepth != 0 {
			return false
		}
		peek := c.ok("peek", "-n", "100")
		after := strings.Index(peek, "after")
		return after >= 0 && strings.LastIndex(peek, "[slow] done") > after
	})
}

// An agent the store shows running on this member while the member holds
// no run of it (a move back to idle lost to an outage) is freed by the
// member's periodic recovery, and the message waiting for it is answered,
// without a restart.
func TestE2EStrandedAgentIsFreedByItsMember(t *testing.T) {
	t.Parallel()
	ms, url := startCluster(t, 1)
	c := ms[0]
	db := connect(t, url)
	c.ok("new", "stuck", "--backend", "mock", "--config", mockConfig(t, map[string]any{"result": "unstuck"}))
	// What a lost write leaves: running on this member, no run of it here.
	if _, err := db.conn.Exec(t.Context(), `UPDATE agents SET state = 'running', daemon = $1, updated_at = 0 WHERE name = 'stuck'`, c.id); err != nil {
		t.Fatal(err)
	}
	c.ok("send", "stuck", "are you there?")
	c.waitFor("stuck's reply", func() bool { return strings.Contains(c.ok("peek"), "[stuck] unstuck") })
	if s := c.agentState("stuck"); s != api.AgentIdle {
		t.Errorf("stuck after its reply: %s, want idle", s)
	}
}
