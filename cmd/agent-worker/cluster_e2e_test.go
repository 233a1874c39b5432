package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// member is one daemon of a test cluster: its own home, the shared store.
type member struct {
	*cli
	cmd *exec.Cmd
	id  string
}

// startCluster starts n daemons on one fresh PostgreSQL database and
// returns them with the database's URL.
func startCluster(t *testing.T, n int, extraEnv ...string) ([]*member, string) {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	var ms []*member
	for range n {
		c := newCLI(t)
		cmd := c.startDaemon(append([]string{"AGENT_WORKER_STORE=" + url}, extraEnv...)...)
		var h api.Health
		if err := json.Unmarshal([]byte(c.ok("status", "--json")), &h); err != nil {
			t.Fatal(err)
		}
		if h.Cluster == nil {
			t.Fatalf("status of a daemon on %s shows no cluster", url)
		}
		ms = append(ms, &member{cli: c, cmd: cmd, id: h.Cluster.Member})
	}
	return ms, url
}

// sqlConn is one connection to the cluster's database for a test's own
// checks, closed when the test ends.
type sqlConn struct {
	t    *testing.T
	conn *pgx.Conn
}

func connect(t *testing.T, url string) *sqlConn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &sqlConn{t, conn}
}

// query runs one SQL query; the caller collects the rows.
func (c *sqlConn) query(sql string, args ...any) pgx.Rows {
	c.t.Helper()
	rows, err := c.conn.Query(c.t.Context(), sql, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return rows
}

// count runs a query that returns one integer.
func (c *sqlConn) count(sql string, args ...any) int {
	c.t.Helper()
	n, err := pgx.CollectExactlyOneRow(c.query(sql, args...), pgx.RowTo[int])
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// Three daemons on one store run a 20-agent mock team: every member
// serves the API with the same token, turns are spread over all three
// (each run records its member), one member is killed with SIGKILL in the
// middle of a run, and still every agent answers every message, none ran
// twice at once, and no acknowledged message is lost.
func TestE2EClusterOfThreeRunsATeamAndSurvivesAKilledMember(t *testing.T) {
	ms, url := startCluster(t, 3, "AGENT_WORKER_MAX_CONCURRENT=3")
	a, b, c := ms[0], ms[1], ms[2]

	var h api.Health
	if err := json.Unmarshal([]byte(b.ok("status", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Cluster.Members) != 3 {
		t.Fatalf("members = %+v, want 3", h.Cluster.Members)
	}
	for _, m := range h.Cluster.Members {
		if !m.Alive {
			t.Errorf("member %s is not alive at the start", m.ID)
		}
	}
	infoA, err := api.ReadDaemonInfo(a.home)
	if err != nil {
		t.Fatalf("daemon info of member a: %v", err)
	}
	infoC, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatalf("daemon info of member c: %v", err)
	}
	if infoA.Token != infoC.Token {
		t.Errorf("members have different tokens: a client could not talk to any of them")
	}

	const agents = 20
	script := `{"script":[{"sleep":"300ms"},{"result":"{{name}} done"}]}`
	for i := range agents {
		ms[i%3].ok("new", fmt.Sprintf("a%02d", i), "--backend", "mock", "--config", script)
	}
	// Each agent gets three messages, each through another member.
	var mu sync.Mutex
	last := map[string]int64{} // the seq of each agent's last message
	send := func(round int, through []*member) {
		var wg sync.WaitGroup
		for i := range agents {
			wg.Go(func() {
				name := fmt.Sprintf("a%02d", i)
				out := through[(i+round)%len(through)].ok("send", name, fmt.Sprintf("round %d", round), "--json")
				var sent struct {
					Seq int64 `json:"seq"`
				}
				if err := json.Unmarshal([]byte(out), &sent); err != nil {
					t.Errorf("send --json: %v: %s", err, out)
				}
				mu.Lock()
				last[name] = max(last[name], sent.Seq)
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	db := connect(t, url)
	count := db.count
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the queue and the store held when the test failed.
		dump := func(sql string) {
			rows, err := db.conn.Query(context.Background(), sql)
			if err != nil {
				t.Logf("%s: %v", sql, err)
				return
			}
			for rows.Next() {
				vals, _ := rows.Values()
				t.Logf("%v", vals)
			}
		}
		dump(`SELECT id, kind, state, attempt, args::text, attempted_by, errors::text FROM river_job WHERE state <> 'completed' ORDER BY id`)
		dump(`SELECT name, state, error FROM agents WHERE state <> 'idle'`)
		dump(`SELECT a.name, (SELECT count(*) FROM message_recipients r WHERE r.agent = a.name AND r.seq > coalesce((SELECT cursor FROM inbox_ack k WHERE k.agent = a.name), 0)) FROM agents a`)
	})
	send(1, ms)
	a.waitFor("a run of member "+c.id+" to succeed", func() bool {
		return count(`SELECT count(*) FROM runs WHERE daemon = $1 AND state = 'succeeded'`, c.id) > 0
	})
	send(2, ms)
	// Kill c in the middle of one of its runs.
	a.waitFor("a run in flight on member "+c.id, func() bool {
		rows := db.query(`SELECT count(*) FROM runs WHERE daemon = $1 AND state = 'running'`, c.id)
		n, _ := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
		return n > 0
	})
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	send(3, ms[:2])

	// Every agent answers everything: its inbox acked up to its last
	// message by a successful run.
	a.waitFor("every agent to answer its last message", func() bool {
		rows := db.query(`SELECT agent, max(inbox_until_seq) FROM runs WHERE state = 'succeeded' GROUP BY agent`)
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			Agent string
			Until int64
		}])
		if err != nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		answered := 0
		for _, r := range got {
			if r.Until >= last[r.Agent] {
				answered++
			}
		}
		return answered == agents
	})

	// Runs were spread over all three members, c's before it died.
	rows := db.query(`SELECT daemon, count(*) FROM runs WHERE state = 'succeeded' GROUP BY daemon`)
	byMember, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Daemon string
		N      int
	}])
	if err != nil {
		t.Fatal(err)
	}
	if len(byMember) != 3 {
		t.Errorf("successful runs by member = %+v, want runs on all three", byMember)
	}
	t.Logf("successful runs by member: %+v", byMember)
	if out := b.ok("runs", "-n", "200", "--json"); !strings.Contains(out, `"daemon": "`+c.id+`"`) {
		t.Errorf("runs --json through b names no run of member %s", c.id)
	}

	// The run c was killed in was taken back: failed, naming the member.
	rows = db.query(`SELECT count(*) FROM runs WHERE daemon = $1 AND state = 'failed' AND error LIKE '%stopped responding%'`, c.id)
	if n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int]); err != nil {
		t.Errorf("count the taken-back runs: %v", err)
	} else if n == 0 {
		t.Errorf("no run of the killed member %s was taken back", c.id)
	}
	rows = db.query(`SELECT count(*) FROM runs WHERE state = 'running'`)
	if n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int]); err != nil {
		t.Errorf("count the running runs: %v", err)
	} else if n != 0 {
		t.Errorf("%d runs still recorded as running", n)
	}

	// No agent ran twice at the same time, on any members.
	rows = db.query(`SELECT r1.agent, r1.id, r1.daemon, r2.id, r2.daemon FROM runs r1 JOIN runs r2
		ON r1.agent = r2.agent AND r1.id < r2.id AND r1.started_at < r2.ended_at AND r2.started_at < r1.ended_at`)
	overlaps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Agent, ID1, D1, ID2, D2 string }])
	if err != nil {
		t.Fatal(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("agents ran twice at once: %+v", overlaps)
	}

	// Every message sent is in the channel, read through any member.
	peek := b.ok("peek", "@global", "-n", "1000")
	for round := 1; round <= 3; round++ { // round 2's sends through c returned before it was killed
		if got := strings.Count(peek, fmt.Sprintf("round %d", round)); got != agents {
			t.Errorf("round %d: %d messages in the channel, want %d", round, got, agents)
		}
	}

	// The survivors say the killed member is gone.
	if err := json.Unmarshal([]byte(a.ok("status", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	for _, m := range h.Cluster.Members {
		if m.ID == c.id && m.Alive {
			t.Errorf("status still shows the killed member %s alive", c.id)
		}
	}
}

// A scheduled wake-up fires once per due time however many members
// schedule the agent: three members, one wake-up line per run.
func TestE2EClusterScheduleFiresOncePerTick(t *testing.T) {
	ms, url := startCluster(t, 3)
	db := connect(t, url)
	ms[0].ok("new", "ticker", "--backend", "mock", "--schedule", "1s", "--config", `{"script":[{"result":"tick"}]}`)
	ms[1].waitFor("four scheduled runs", func() bool {
		rows := db.query(`SELECT count(*) FROM runs WHERE agent = 'ticker' AND state = 'succeeded'`)
		n, _ := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
		return n >= 4
	})
	ms[0].ok("stop", "ticker")
	rows := db.query(`SELECT content FROM messages WHERE sender = 'system' AND content LIKE '@ticker %' ORDER BY seq`)
	wakeups, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// A wake-up's run that failed is tried again (a loaded machine can
	// time out a plugin's start): only first attempts answer wake-ups.
	rows = db.query(`SELECT count(*) FROM runs WHERE agent = 'ticker' AND attempt = 1`)
	runs, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("count ticker's runs: %v", err)
	}
	rows = db.query(`SELECT id || ' attempt ' || attempt || ' ' || state || ' on ' || daemon FROM runs WHERE agent = 'ticker' ORDER BY started_at`)
	if all, err := pgx.CollectRows(rows, pgx.RowTo[string]); err == nil {
		t.Logf("ticker's runs: %q", all)
	}
	rows = db.query(`SELECT count(DISTINCT daemon) FROM runs WHERE agent = 'ticker'`)
	members, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("count the members that ran ticker: %v", err)
	}
	t.Logf("%d wake-ups, %d runs, on %d member(s)", len(wakeups), runs, members)
	// A run can still have been due when the agent stopped: at most one
	// wake-up more than runs, never one per member.
	if len(wakeups) < runs || len(wakeups) > runs+1 {
		t.Errorf("%d scheduled wake-ups for %d runs: a tick fired more than once", len(wakeups), runs)
	}
}

// An outside agent connected over MCP to member B sees a message sent
// through member A, and B's event stream shows it: the store is shared,
// and the members relay their events.
func TestE2EClusterMessageThroughOneMemberReachesAnMCPClientOfAnother(t *testing.T) {
	ms, _ := startCluster(t, 2)
	a, b := ms[0], ms[1]
	a.ok("new", "ext", "--backend", "external")
	sess := b.mcpSession("ext")

	stream := exec.Command(binary, "peek", "@global", "--follow")
	stream.Env = b.env()
	out, err := stream.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Process.Kill(); stream.Wait() })
	lines := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := out.Read(buf)
			acc += string(buf[:n])
			for {
				i := strings.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- acc[:i]
				acc = acc[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()

	sent := time.Now()
	a.ok("send", "ext", "ping through a")
	for line := range lines {
		if strings.Contains(line, "ping through a") {
			t.Logf("B's event stream showed A's message %s after the send returned", time.Since(sent).Round(time.Millisecond))
			break
		}
	}
	res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: "my_inbox"})
	if err != nil || res.IsError {
		t.Fatalf("my_inbox on B: %v %+v", err, res)
	}
	b2, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b2), "ping through a") {
		t.Errorf("ext's inbox on B = %s, want A's message", b2)
	}
}

// Documents live in the shared database in a cluster: one written through
// a member is read through another, and no file is written in either
// member's home.
func TestE2EClusterDocumentsAreSharedByTheMembers(t *testing.T) {
	ms, url := startCluster(t, 2)
	a, b := ms[0], ms[1]
	a.ok("doc", "write", "@global", "--file", "plan.md", "# the plan\n")
	b.ok("doc", "append", "@global", "--file", "plan.md", "* step one\n")
	if got := a.ok("doc", "read", "@global", "--file", "plan.md"); !strings.Contains(got, "# the plan") || !strings.Contains(got, "* step one") {
		t.Errorf("plan.md read through a = %q, want both members' writes", got)
	}
	if got := b.ok("doc", "list", "@global"); !strings.Contains(got, "plan.md") {
		t.Errorf("doc list through b = %q, want plan.md", got)
	}
	db := connect(t, url)
	if n := db.count(`SELECT count(*) FROM agent_worker_docs.documents`); n != 1 {
		t.Errorf("%d documents in PostgreSQL, want 1", n)
	}
	for _, m := range ms {
		if files, _ := filepath.Glob(filepath.Join(m.home, ".workflow", "*", "*", "documents", "*")); len(files) > 0 {
			t.Errorf("documents written as files in %s: %v", m.home, files)
		}
	}
}

// A workflow's file is watched by the member that started it. When that
// member dies the team keeps running from the config in the store and the
// others say whose file it was; starting the file on another member
// takes it over, and that member's edits then apply.
func TestE2EClusterWorkflowFileMovesToTheMemberThatStartsIt(t *testing.T) {
	ms, _ := startCluster(t, 2)
	a, b := ms[0], ms[1]
	path := filepath.Join(t.TempDir(), "crew.yaml")
	version := func(v string) {
		writeFile(t, path, "agents:\n  bob:\n    backend: mock\n    config: {script: [{result: \""+v+"\"}]}\n")
	}
	replied := func(c *member, want string) {
		t.Helper()
		c.waitFor("bob to say "+want, func() bool {
			return strings.Contains(c.ok("peek", "@crew", "-n", "100"), "[bob] "+want)
		})
	}
	version("v1")
	a.ok("start", path, "--background")
	b.ok("send", "bob@crew", "one")
	replied(b, "v1")

	// An edit reaches the owner, a.
	version("v2")
	a.waitFor("the edit to be applied", func() bool {
		return strings.Contains(b.ok("info", "bob@crew", "--json"), `v2`)
	})
	b.ok("send", "bob@crew", "two")
	replied(b, "v2")

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	b.waitFor("status to say the file's member is gone", func() bool {
		return strings.Contains(b.ok("status"), "was watched by member "+a.id)
	})
	b.ok("send", "bob@crew", "three")
	replied(b, "v2") // the team runs on from the store

	if out := b.ok("start", path, "--background"); !strings.Contains(out, "this member watches") {
		t.Errorf("start on b = %q, want a take-over", out)
	}
	if strings.Contains(b.ok("status"), "was watched by member") {
		t.Errorf("status still reports the file as orphaned after b took it over")
	}
	version("v3")
	b.waitFor("b to apply the edit", func() bool {
		return strings.Contains(b.ok("info", "bob@crew", "--json"), `v3`)
	})
	b.ok("send", "bob@crew", "four")
	replied(b, "v3")
}

// The CLI talks to any member named by AGENT_WORKER_URL and the cluster's
// one token, from a home that runs no daemon, and starts none.
func TestE2EClusterCLIPointedAtAnyMember(t *testing.T) {
	ms, _ := startCluster(t, 2)
	ms[0].ok("new", "carol", "--backend", "mock", "--config", `{"script":[{"result":"pong"}]}`)
	infoB, err := api.ReadDaemonInfo(ms[1].home)
	if err != nil {
		t.Fatal(err)
	}
	remote := newCLI(t)
	run := func(env []string, args ...string) result {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(remote.env(), env...)
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return result{cmd.ProcessState.ExitCode(), string(out), stderr}
	}
	url := "AGENT_WORKER_URL=" + infoB.URL()
	if r := run([]string{url, "AGENT_WORKER_TOKEN=" + infoB.Token}, "list"); r.code != 0 || !strings.Contains(r.stdout, "carol") {
		t.Errorf("list through b: exit %d, %q %q; want carol, made through a", r.code, r.stdout, r.stderr)
	}
	if r := run([]string{url}, "list"); r.code != 2 || !strings.Contains(r.stderr, "AGENT_WORKER_TOKEN") {
		t.Errorf("no token: exit %d, %q; want a usage error naming AGENT_WORKER_TOKEN", r.code, r.stderr)
	}
	if r := run([]string{url, "AGENT_WORKER_TOKEN=wrong"}, "list"); r.code == 0 {
		t.Errorf("a wrong token was accepted: %q", r.stdout)
	}
	// ask through a member that did not create the agent follows its run.
	for i := range 3 {
		if out := ms[i%2].ok("ask", "carol", "ping"); !strings.Contains(out, "pong") {
			t.Errorf("ask %d through member %d = %q, want pong", i, i%2, out)
		}
	}
	if _, err := api.ReadDaemonInfo(remote.home); err == nil {
		t.Errorf("a daemon was started in the remote CLI's home")
	}
}

// `cancel` through a member that does not run the agent ends the run on
// the member that does: the run is recorded cancelled, the agent is idle.
func TestE2EClusterCancelThroughAnotherMember(t *testing.T) {
	ms, url := startCluster(t, 2)
	db := connect(t, url)
	ms[0].ok("new", "slow", "--backend", "mock", "--config", `{"script":[{"hang":true}]}`)
	ms[0].ok("send", "slow", "take your time")
	var runner string
	ms[0].waitFor("slow's run to start", func() bool {
		rows := db.query(`SELECT daemon FROM runs WHERE agent = 'slow' AND state = 'running'`)
		ds, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		if len(ds) == 1 {
			runner = ds[0]
		}
		return runner != ""
	})
	other := ms[0]
	if other.id == runner {
		other = ms[1]
	}
	out := other.ok("cancel", "slow")
	if n := db.count(`SELECT count(*) FROM runs WHERE agent = 'slow' AND state = 'cancelled' AND daemon = $1`, runner); n != 1 {
		t.Errorf("cancel through %s (%q): %d cancelled runs on %s, want 1", other.id, out, n, runner)
	}
	other.waitFor("slow to be idle", func() bool {
		return strings.Contains(other.ok("info", "slow", "--json"), `"state": "idle"`)
	})
}

// While PostgreSQL is down, a request that needs the store answers 503
// and the CLI exits 6 saying the store is unreachable, and status still
// answers and says so (issue 27, item 3).
func TestE2EStoreOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t) // its own: the test stops it
	dsn, err := pg.CreateDatabase(t.Context(), "outage")
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	c.startDaemon("AGENT_WORKER_STORE=" + dsn)
	c.ok("new", "bob", "--backend", "mock")
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if r := c.run("send", "bob", "hello"); r.code != api.ExitUnavailable || !strings.Contains(r.stderr, "the store is unreachable") {
		t.Errorf("send with the store down: exit %d, stderr %q; want %d and the store named unreachable", r.code, r.stderr, api.ExitUnavailable)
	}
	r := c.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "store:     UNREACHABLE (") || !strings.Contains(r.stdout, "store: UNREACHABLE since") {
		t.Errorf("status with the store down: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
