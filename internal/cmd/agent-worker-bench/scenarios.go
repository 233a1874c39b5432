package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// rawSQLite is the ceiling of a store write: one row per immediate
// transaction in a WAL database with the store's pragmas, one at a time.
func rawSQLite(dir string, n int) (float64, error) {
	conn, err := sqlite.OpenConn(filepath.Join(dir, "raw.db"), sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	for _, q := range []string{"PRAGMA journal_mode = WAL;", "PRAGMA synchronous = NORMAL;",
		"CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, at INTEGER NOT NULL);"} {
		if err := sqlitex.ExecuteTransient(conn, q, nil); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := range n {
		end, err := sqlitex.ImmediateTransaction(conn)
		if err != nil {
			return 0, err
		}
		err = sqlitex.Execute(conn, "INSERT INTO t (body, at) VALUES (?, ?);",
			&sqlitex.ExecOptions{Args: []any{fmt.Sprintf("@s%d ping", i%8), time.Now().UnixMilli()}})
		end(&err)
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// storeAppend is the same load through the store: one channel message per
// transaction (seq, recipients, inbox rows), one at a time.
func storeAppend(ctx context.Context, dir string, n int) (float64, error) {
	db, err := store.Open(ctx, filepath.Join(dir, "store.db"), store.Options{})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	for i := range 9 {
		if _, err := db.CreateAgent(ctx, store.Agent{Name: fmt.Sprintf("s%d", i), Workflow: "global", Tag: "main", Backend: "external"}); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := range n {
		if _, err := db.AppendMessages(ctx, []store.NewMessage{{Workflow: "global", Tag: "main", Sender: "s0",
			Content: fmt.Sprintf("@s%d ping", i%8+1), Recipients: []string{fmt.Sprintf("s%d", i%8+1)}}}); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// externalAgents registers outside agents name0..name(n-1) in wf and
// returns the MCP URL and their tokens.
func externalAgents(ctx context.Context, c *api.Client, wf, prefix string, n int) (string, []string, error) {
	var url string
	tokens := make([]string, n)
	for i := range n {
		t := api.Target{Agent: fmt.Sprintf("%s%d", prefix, i), Workflow: wf, Tag: "main"}
		if _, err := c.GetAgent(ctx, t); api.ErrorCode(err) == api.CodeNotFound {
			if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: t.Agent, Workflow: wf, Tag: "main", Backend: "external"}); err != nil {
				return "", nil, err
			}
		}
		cfg, err := c.MCPConfig(ctx, t)
		if err != nil {
			return "", nil, err
		}
		url, tokens[i] = cfg.URL, cfg.Token
	}
	return url, tokens, nil
}

// mockAgent registers a standalone mock agent following script.
func mockAgent(ctx context.Context, c *api.Client, name string, script ...map[string]any) error {
	spec := api.AgentSpec{Name: name, Backend: "mock"}
	if len(script) > 0 {
		b, _ := json.Marshal(script)
		spec.Config.Extra = map[string]json.RawMessage{"script": b}
	}
	_, err := c.CreateAgent(ctx, spec)
	return err
}

// follower streams the global channel's messages and run ends.
type follower struct {
	messages chan api.Message
	runsDone chan string // agent names whose run ended
	cancel   context.CancelFunc
}

func follow(ctx context.Context, c *api.Client, target string) (*follower, error) {
	return followSince(ctx, c, target, 0)
}

// followSince is follow from after seq (0: from now on).
func followSince(ctx context.Context, c *api.Client, target string, seq int64) (*follower, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{messages: make(chan api.Message, 4096), runsDone: make(chan string, 4096), cancel: cancel}
	connected := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- c.Follow(ctx, target, 0, api.FollowHandlers{
			SinceSeq:  seq,
			Connected: func() { close(connected) },
			Message:   func(m api.Message) error { f.messages <- m; return nil },
			Run: func(kind string, r api.RunEventInfo) error {
				if kind != "run_started" {
					f.runsDone <- r.Agent
				}
				return nil
			},
		})
	}()
	select {
	case <-connected:
		return f, nil
	case err := <-errc:
		cancel()
		return nil, fmt.Errorf("follow %s: %v", target, err)
	case <-time.After(10 * time.Second):
		cancel()
		return nil, errors.New("follow: no stream within 10 s")
	}
}

// waitMessage waits for a message from sender.
func (f *follower) waitMessage(from string, limit time.Duration) (api.Message, error) {
	return f.waitFor(func(m api.Message) bool { return m.From == from }, "from "+from, limit)
}

// waitContent waits for a message whose text is content.
func (f *follower) waitContent(content string, limit time.Duration) error {
	_, err := f.waitFor(func(m api.Message) bool { return m.Content == content }, fmt.Sprintf("%q", content), limit)
	return err
}

// waitFor waits for the first message that matches, named what in the
// error when none comes within limit.
func (f *follower) waitFor(match func(api.Message) bool, what string, limit time.Duration) (api.Message, error) {
	timeout := time.After(limit)
	for {
		select {
		case m := <-f.messages:
			if match(m) {
				return m, nil
			}
		case <-timeout:
			return api.Message{}, fmt.Errorf("no message %s on the stream within %s", what, limit)
		}
	}
}

func (f *follower) waitRunEnd(agent string, limit time.Duration) error {
	timeout := time.After(limit)
	for {
		select {
		case a := <-f.runsDone:
			if strings.HasPrefix(a, agent) {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("%s's run did not end within %s", agent, limit)
		}
	}
}

// mentionReply sends n messages mentioning a mock agent through c, one at
// a time, and measures each from the send until the agent's reply is in
// c's channel stream; the next message goes after the run has ended and
// once the mock backend's replacement spare is ready on each daemon of
// warmOn (this measures a run on a warm spare; ping-pong measures runs back
// to back). With warmOn empty nothing waits for spares.
func mentionReply(ctx context.Context, c *api.Client, warmOn []*api.Client, name string, n int) (p50, p99 time.Duration, err error) {
	r, err := newReplier(ctx, c, warmOn, name)
	if err != nil {
		return 0, 0, err
	}
	defer r.close()
	lat := make([]time.Duration, 0, n)
	for i := range n + 5 { // 5 warm-up rounds
		el, err := r.round(ctx)
		if err != nil {
			return 0, 0, err
		}
		if i >= 5 {
			lat = append(lat, el)
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

// replier is one mention → reply round trip, repeatable: a mock agent that
// answers "ping" with "pong", on the daemon of c, and the channel stream its
// reply is awaited on.
type replier struct {
	c      *api.Client
	warmOn []*api.Client // daemons whose mock spare must be ready before a round
	name   string
	f      *follower
	rounds int
}

// newReplier registers the mock agent name through c and follows the
// global channel.
func newReplier(ctx context.Context, c *api.Client, warmOn []*api.Client, name string) (*replier, error) {
	if err := mockAgent(ctx, c, name, map[string]any{"reply": "pong"}); err != nil {
		return nil, err
	}
	f, err := follow(ctx, c, "@global")
	if err != nil {
		return nil, err
	}
	return &replier{c: c, warmOn: warmOn, name: name, f: f}, nil
}

func (r *replier) close() { r.f.cancel() }

// round waits for the spares of warmOn (but before the first round, when
// there are none yet), sends one ping and returns the time until the reply
// is on the stream; it returns once the agent's run has ended.
func (r *replier) round(ctx context.Context) (time.Duration, error) {
	if r.rounds > 0 {
		for _, w := range r.warmOn {
			if err := waitSpare(ctx, w, "mock"); err != nil {
				return 0, err
			}
		}
	}
	r.rounds++
	t0 := time.Now()
	if _, err := r.c.Send(ctx, api.SendRequest{Target: r.name, Message: "ping"}); err != nil {
		return 0, err
	}
	if _, err := r.f.waitMessage(r.name, 30*time.Second); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	if err := r.f.waitRunEnd(r.name, 30*time.Second); err != nil {
		return 0, err
	}
	// Drain what the reply run left (its own run events).
	for len(r.f.runsDone) > 0 {
		<-r.f.runsDone
	}
	return el, nil
}

// pingPong runs a workflow named name of agents mock agents on a fresh
// daemon, agent i answering every run with a mention of agent i+1 (mod
// agents); the kickoff mentions the first (two agents: one message in
// flight) or all of them (a ring: as many in flight as agents). After a
// warm-up it returns the channel's seq advance over window, per second,
// and the CPU each message cost the daemon and its plugin processes.
func pingPong(ctx context.Context, cfg config, name string, agents int, window time.Duration) (rate float64, cost perMessage, err error) {
	home, err := tempHome(cfg, name)
	if err != nil {
		return 0, cost, err
	}
	d, err := startDaemon(ctx, cfg, home, cfg.sparesOn()...)
	if err != nil {
		return 0, cost, err
	}
	defer d.stop(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nloop_guard: {max_rounds: 0}\nagents:\n", name)
	var kickoff []string
	for i := range agents {
		fmt.Fprintf(&b, "  %s%d:\n    backend: mock\n    config:\n      script:\n        - reply: \"@%s%d ping\"\n", name, i, name, (i+1)%agents)
		if agents > 2 || i == 0 {
			kickoff = append(kickoff, fmt.Sprintf("@%s%d", name, i))
		}
	}
	fmt.Fprintf(&b, "kickoff: %q\n", strings.Join(kickoff, " ")+" go")
	// The workflow's directory is its agents' project: outside the home,
	// which the run sandbox keeps from them.
	dir := filepath.Join(cfg.work, name+"-workflow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, cost, err
	}
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return 0, cost, err
	}
	dry, err := d.client.StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: "main", DryRun: true})
	if err != nil {
		return 0, cost, fmt.Errorf("workflow %s: %w", name, err)
	}
	target := "@" + name
	f, err := followSince(ctx, d.client, target, dry.StartSeq)
	if err != nil {
		return 0, cost, err
	}
	defer f.cancel()
	if _, err := d.client.StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: "main"}); err != nil {
		return 0, cost, fmt.Errorf("start workflow %s: %w", name, err)
	}
	defer d.client.StopWorkflow(ctx, api.Target{Workflow: name, Tag: "main"}, true)
	for range warmMessages(agents) {
		if _, err := f.waitFor(func(m api.Message) bool { return strings.HasPrefix(m.From, name) }, "from the agents", 30*time.Second); err != nil {
			return 0, cost, fmt.Errorf("%s warm-up: %w%s", name, err, failedRuns(ctx, d.client, target))
		}
	}
	f.cancel() // the stream is not what is measured: the seq is
	seq := func() (int64, error) {
		l, err := d.client.Peek(ctx, target, 1, 0)
		if err != nil || len(l) == 0 {
			return 0, fmt.Errorf("peek %s: %v (%d messages)", target, err, len(l))
		}
		return l[len(l)-1].Seq, nil
	}
	s0, err := seq()
	if err != nil {
		return 0, cost, err
	}
	stopProfile := d.profile(ctx, cfg.profileFile(name))
	self0, children0, _ := cpuTimes(d.pid())
	t0 := time.Now()
	time.Sleep(window) // the fixed measurement window
	s1, err := seq()
	took := time.Since(t0)
	self1, children1, _ := cpuTimes(d.pid())
	stopProfile()
	if err != nil {
		return 0, cost, err
	}
	if n := s1 - s0; n > 0 {
		cost = perMessage{daemon: (self1 - self0) / time.Duration(n), plugins: (children1 - children0) / time.Duration(n)}
	}
	return float64(s1-s0) / took.Seconds(), cost, nil
}

// perMessage is the CPU a ping-pong message cost the daemon and the plugin
// processes it reaped in the window.
type perMessage struct{ daemon, plugins time.Duration }

func (c perMessage) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("CPU per message: daemon %.1f ms, plugin processes %.1f ms", ms(c.daemon), ms(c.plugins))
}

// failedRuns says why target's last runs failed, if any did, for an error
// message.
func failedRuns(ctx context.Context, c *api.Client, target string) string {
	runs, err := c.Runs(ctx, api.RunQuery{Target: target, Failed: true, Limit: 3})
	if err != nil || len(runs) == 0 {
		return ""
	}
	var why []string
	for _, r := range runs {
		why = append(why, fmt.Sprintf("%s %s: %s", r.Agent, r.State, r.Error))
	}
	return " (failed runs: " + strings.Join(why, "; ") + ")"
}

// warmMessages is how many agent messages a ping-pong workflow exchanges
// before its window opens.
func warmMessages(agents int) int { return 2 * agents }

// cliSendReply runs `agent-worker send echo ping` as a process, n times
// after 2 warm-ups, one at a time, and measures each from the start of the
// process until the mock agent's reply is on the channel's stream.
func cliSendReply(ctx context.Context, cfg config, d *daemon, n int) (p50, p99 time.Duration, err error) {
	if err := mockAgent(ctx, d.client, "echo", map[string]any{"reply": "pong"}); err != nil {
		return 0, 0, err
	}
	f, err := follow(ctx, d.client, "@global")
	if err != nil {
		return 0, 0, err
	}
	defer f.cancel()
	lat := make([]time.Duration, 0, n)
	for i := range n + 2 {
		if i > 0 {
			if err := waitSpare(ctx, d.client, "mock"); err != nil {
				return 0, 0, err
			}
		}
		cmd := exec.CommandContext(ctx, cfg.bin, "send", "echo", "ping")
		cmd.Env = append(os.Environ(), "AGENT_WORKER_HOME="+d.home)
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("agent-worker send: %v: %s", err, out)
		}
		if _, err := f.waitMessage("echo", 30*time.Second); err != nil {
			return 0, 0, err
		}
		if i >= 2 {
			lat = append(lat, time.Since(t0))
		}
		if err := f.waitRunEnd("echo", 30*time.Second); err != nil {
			return 0, 0, err
		}
		for len(f.runsDone) > 0 {
			<-f.runsDone
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

// runWorkflow writes a workflow of n mock agents whose kickoff mentions
// them all, and times `agent-worker run` of it until the team is idle.
// The best of tries runs is reported, each under its own tag.
func runWorkflow(ctx context.Context, cfg config, d *daemon, n, tries int) (time.Duration, error) {
	file, err := teamFile(filepath.Join(cfg.work, fmt.Sprintf("wf%d", n)), n)
	if err != nil {
		return 0, err
	}
	best := time.Duration(0)
	for i := range tries {
		cmd := exec.CommandContext(ctx, cfg.bin, "run", file, "--tag", fmt.Sprintf("r%d", i))
		cmd.Env = append(os.Environ(), "AGENT_WORKER_HOME="+d.home)
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("run %d-agent workflow: %v: %s", n, err, out)
		}
		if el := time.Since(t0); best == 0 || el < best {
			best = el
		}
	}
	return best, nil
}

// teamFile writes dir/team.yaml: a workflow of n mock agents on their
// default script whose kickoff mentions them all. Both systems read it.
func teamFile(dir string, n int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: team%d\nagents:\n", n)
	var mentions []string
	for i := range n {
		fmt.Fprintf(&b, "  a%d:\n    backend: mock\n", i)
		mentions = append(mentions, fmt.Sprintf("@a%d", i))
	}
	fmt.Fprintf(&b, "kickoff: %q\n", strings.Join(mentions, " ")+" please report in")
	file := filepath.Join(dir, "team.yaml")
	return file, os.WriteFile(file, []byte(b.String()), 0o644)
}

// myInbox1M seeds total messages (a million but under -quick) among 100
// outside agents into a stopped daemon's store, restarts it and measures
// my_inbox, p50/p99.
func myInbox1M(ctx context.Context, cfg config, total, calls int) (p50, p99 time.Duration, err error) {
	home, err := tempHome(cfg, "inbox1m")
	if err != nil {
		return 0, 0, err
	}
	d, err := startDaemon(ctx, cfg, home)
	if err != nil {
		return 0, 0, err
	}
	const agents, batch = 100, 20_000
	if _, _, err := externalAgents(ctx, d.client, "big", "a", agents); err != nil {
		d.stop(ctx)
		return 0, 0, err
	}
	d.stop(ctx)
	db, err := store.Open(ctx, filepath.Join(home, api.DBFile), store.Options{})
	if err != nil {
		return 0, 0, err
	}
	for n := 0; n < total; n += batch {
		ms := make([]store.NewMessage, batch)
		for j := range ms {
			from, to := (n+j)%agents, (n+j+1)%agents
			ms[j] = store.NewMessage{Workflow: "big", Tag: "main", Sender: fmt.Sprintf("a%d", from),
				Content: fmt.Sprintf("@a%d message %d", to, n+j), Recipients: []string{fmt.Sprintf("a%d", to)}}
		}
		if _, err := db.AppendMessages(ctx, ms); err != nil {
			db.Close()
			return 0, 0, err
		}
	}
	db.Close()
	if d, err = startDaemon(ctx, cfg, home); err != nil {
		return 0, 0, err
	}
	defer d.stop(ctx)
	url, tokens, err := externalAgents(ctx, d.client, "big", "a", agents)
	if err != nil {
		return 0, 0, err
	}
	sessions := make([]*mcp.ClientSession, agents)
	for i := range sessions {
		if sessions[i], err = goSession(ctx, url, tokens[i]); err != nil {
			return 0, 0, err
		}
		defer sessions[i].Close()
	}
	lat := make([]time.Duration, 0, calls)
	for i := range calls + agents {
		t0 := time.Now()
		res, err := sessions[i%agents].CallTool(ctx, &mcp.CallToolParams{Name: "my_inbox"})
		el := time.Since(t0)
		if err != nil || res.IsError {
			return 0, 0, fmt.Errorf("my_inbox: %v %v", err, res)
		}
		if i >= agents { // the first call of each agent warms its caches
			lat = append(lat, el)
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

// waitSpare waits until backend has a warm spare ready. A daemon whose
// backend has had no run yet keeps no spares (a member of a cluster that
// has not taken one of its runs): there is nothing to wait for.
func waitSpare(ctx context.Context, c *api.Client, backend string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, err := c.Plugins(ctx)
		if err != nil {
			return err
		}
		for _, p := range l.Plugins {
			if p.Kind == "backend" && p.Name == backend && (p.Spares == nil || p.Spares.Live > 0) {
				return nil
			}
		}
		time.Sleep(2 * time.Millisecond) // polling another process's state; not what is measured
	}
	return fmt.Errorf("no warm %s spare within 30 s", backend)
}
