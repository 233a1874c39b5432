package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/pgserver"
)

// clusterTitle heads the cluster table wherever it is printed.
const clusterTitle = "Cluster on PostgreSQL beside the embedded store"

// column is one configuration of the cluster table: how many daemons, on
// which store.
type column struct {
	title    string
	daemons  int
	postgres bool
}

var columns = []column{
	{"SQLite, 1 daemon", 1, false},
	{"PostgreSQL, 1 daemon", 1, true},
	{"2 daemons", 2, true},
	{"3 daemons", 3, true},
}

// clusterTable is the cluster section's table: one row per figure, one
// cell per column.
type clusterTable struct {
	machine, postgres string
	rows              []clusterRow
	took              time.Duration
}

type clusterRow struct {
	what  string
	cells [4]string // by columns' order
}

// set puts a figure in row what (added in the order first set) for column col.
func (t *clusterTable) set(what string, col int, figure string) {
	step("%s, %s: %s", what, columns[col].title, figure)
	for i := range t.rows {
		if t.rows[i].what == what {
			t.rows[i].cells[col] = figure
			return
		}
	}
	r := clusterRow{what: what}
	r.cells[col] = figure
	t.rows = append(t.rows, r)
}

func (t *clusterTable) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s.** Measured %s on %s, PostgreSQL %s, in %s.\n\n", clusterTitle,
		time.Now().UTC().Format("2006-01-02"), t.machine, t.postgres, t.took.Round(time.Second))
	b.WriteString("Each column is a fresh database and fresh daemons (warm spares on, `--max-concurrent` at its default of 2 × cores each), " +
		"all on this one machine beside the PostgreSQL server (started by `internal/pgserver`: fsync off) and the clients: " +
		"more daemons add run slots and MCP endpoints, not cores.\n\n")
	b.WriteString("| what |")
	for _, c := range columns {
		b.WriteString(" " + c.title + " |")
	}
	b.WriteString("\n|---|---|---|---|---|\n")
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s |", r.what)
		for _, c := range r.cells {
			if c == "" {
				c = "—"
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The rows of the cluster table (the team's rows name its size, which
// -quick makes smaller).
const (
	rowRuns    = "runs/s, %d mock agents, one message each per round, sends spread over the daemons (%d rounds after a warm-up)"
	rowShare   = "runs taken by each daemon in those rounds (daemon 1 / 2 / 3)"
	rowSend    = "`channel_send`, 8 go-sdk clients spread over the daemons"
	rowSendCPU = "daemons' CPU per `channel_send` (all daemons: daemon 1 + 2 + 3; PostgreSQL not counted)"
	rowMention = "mention → reply, mock agent, sent and seen through daemon 1, warm spares"
	rowAcross  = "a message sent through daemon 1, seen on the event stream of the last daemon (what `peek --follow`, SSE and the console use)"
)

// measureCluster measures every column of the cluster table. It returns
// nil, after saying why, on a machine that cannot run PostgreSQL.
func measureCluster(ctx context.Context, cfg config) (*clusterTable, error) {
	start := time.Now()
	n := func(full, quick int) int {
		if cfg.quick {
			return quick
		}
		return full
	}
	step("cluster: starting a throwaway PostgreSQL server")
	pg, err := pgserver.Launch()
	if pgserver.IsUnavailable(err) {
		step("cluster rows skipped: %v", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	defer func() {
		if err := pg.Stop(); err != nil {
			step("cluster: %v", err)
		}
	}()
	t := &clusterTable{machine: machine()}
	for i, col := range columns {
		step("cluster: %s", col.title)
		var store []string
		if col.postgres {
			dsn, err := pg.CreateDatabase(ctx, fmt.Sprintf("bench_%d_daemons", col.daemons))
			if err != nil {
				return nil, fmt.Errorf("cluster: %w", err)
			}
			if t.postgres == "" {
				t.postgres = serverVersion(ctx, dsn)
			}
			store = []string{"--store", dsn}
		}
		if err := measureColumn(ctx, cfg, t, i, store, n); err != nil {
			return nil, fmt.Errorf("cluster, %s: %w", col.title, err)
		}
	}
	t.took = time.Since(start)
	return t, nil
}

// measureColumn starts column col's daemons, each with a home of its own
// and the daemon flags store, and measures its figures in an order that
// leaves each scenario a store without the previous one's backlog: the
// team's runs (which also start every daemon's mock spares), mention →
// reply, then the channel_send load.
func measureColumn(ctx context.Context, cfg config, t *clusterTable, col int, store []string, n func(full, quick int) int) error {
	daemons := make([]*daemon, 0, columns[col].daemons)
	defer func() {
		for _, d := range daemons {
			d.stop(ctx)
		}
	}()
	for i := range columns[col].daemons {
		home, err := tempHome(cfg, fmt.Sprintf("cluster%d-%d", col, i+1))
		if err != nil {
			return err
		}
		d, err := startDaemon(ctx, cfg, home, append(cfg.sparesOn(), store...)...)
		if err != nil {
			return fmt.Errorf("daemon %d: %w", i+1, err)
		}
		daemons = append(daemons, d)
	}
	ids, err := members(ctx, daemons)
	if err != nil {
		return err
	}
	clients := make([]*api.Client, len(daemons))
	for i, d := range daemons {
		clients[i] = d.client
	}

	agents, rounds := n(50, 10), n(3, 1)
	rate, byDaemon, err := teamRuns(ctx, clients, agents, rounds)
	if err != nil {
		return fmt.Errorf("team runs: %w", err)
	}
	t.set(fmt.Sprintf(rowRuns, agents, rounds), col, fmt.Sprintf("%.0f runs/s", rate))
	share := make([]string, len(ids))
	taken := 0
	for i, id := range ids {
		share[i] = fmt.Sprint(byDaemon[id])
		taken += byDaemon[id]
	}
	if len(ids) == 1 { // the embedded store may record its runs under another name
		share[0] = fmt.Sprint(sum(byDaemon))
	} else if other := sum(byDaemon) - taken; other > 0 {
		share = append(share, fmt.Sprintf("%d by no known daemon", other))
	}
	t.set(rowShare, col, strings.Join(share, " / "))

	p50, p99, err := mentionReply(ctx, clients[0], clients, "echo", n(50, 5))
	if err != nil {
		return fmt.Errorf("mention → reply: %w", err)
	}
	t.set(rowMention, col, fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99)))

	p50, p99, err = across(ctx, clients[0], clients[len(clients)-1], n(200, 20))
	if err != nil {
		return fmt.Errorf("message across daemons: %w", err)
	}
	t.set(rowAcross, col, fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99)))

	l, err := spreadSend(ctx, cfg, daemons, col)
	if err != nil {
		return fmt.Errorf("channel_send: %w", err)
	}
	t.set(rowSend, col, loadText(l))
	cpu := fmt.Sprintf("%.3f ms", l.cpuPerCall())
	if len(l.cpus) > 1 {
		each := make([]string, len(l.cpus))
		for i, c := range l.cpus {
			each[i] = fmt.Sprintf("%.3f", float64(c.Microseconds())/1000/float64(l.calls))
		}
		cpu += " (" + strings.Join(each, " + ") + ")"
	}
	t.set(rowSendCPU, col, cpu)
	return nil
}

// across measures how long a message sent through one daemon takes to
// reach the event stream of another (the same daemon with one): from the
// send's start to the message on the stream, n times after 10 warm-ups.
// In a cluster this is the store's commit plus the LISTEN/NOTIFY relay.
func across(ctx context.Context, from, to *api.Client, n int) (p50, p99 time.Duration, err error) {
	f, err := follow(ctx, to, "@global")
	if err != nil {
		return 0, 0, err
	}
	defer f.cancel()
	lat := make([]time.Duration, 0, n)
	for i := range n + 10 {
		body := fmt.Sprintf("across %d", i)
		t0 := time.Now()
		if _, err := from.Send(ctx, api.SendRequest{Target: "@global", Message: body}); err != nil {
			return 0, 0, err
		}
		if err := f.waitContent(body, 10*time.Second); err != nil {
			return 0, 0, err
		}
		if i >= 10 {
			lat = append(lat, time.Since(t0))
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

func sum(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

// members returns the member id of each daemon ("" on the embedded store)
// once every daemon of a cluster sees all of them alive, so that no
// measurement starts while one of them is still joining.
func members(ctx context.Context, daemons []*daemon) ([]string, error) {
	ids := make([]string, len(daemons))
	deadline := time.Now().Add(30 * time.Second)
	for i, d := range daemons {
		for {
			h, err := d.client.Health(ctx)
			if err != nil {
				return nil, err
			}
			alive := 0
			if h.Cluster != nil {
				ids[i] = h.Cluster.Member
				for _, m := range h.Cluster.Members {
					if m.Alive {
						alive++
					}
				}
			}
			if len(daemons) == 1 || alive == len(daemons) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("daemon %d sees %d of %d members alive after 30 s", i+1, alive, len(daemons))
			}
			time.Sleep(50 * time.Millisecond) // polling other processes; not measured
		}
	}
	return ids, nil
}

// teamRuns registers agents mock agents that answer with a bare result (no
// MCP call, no message), then, round after round, sends one message to
// every agent, agent i's through daemon i mod len(clients), and waits until
// every agent has a succeeded run that read its message, polling the runs
// through the daemons in turn. The first round warms up; the rate is the
// runs of the other rounds over their time, and byDaemon counts those runs
// by the daemon that ran them.
func teamRuns(ctx context.Context, clients []*api.Client, agents, rounds int) (rate float64, byDaemon map[string]int, err error) {
	name := func(i int) string { return fmt.Sprintf("t%d", i) }
	for i := range agents {
		if err := mockAgent(ctx, clients[0], name(i), map[string]any{"result": "done"}); err != nil {
			return 0, nil, err
		}
	}
	byDaemon = map[string]int{}
	var took time.Duration
	polls := 0
	for round := range rounds + 1 {
		seqs := make([]int64, agents)
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		t0 := time.Now()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; i < agents; i += len(clients) {
					m, err := clients[c].Send(ctx, api.SendRequest{Target: name(i), Message: fmt.Sprintf("round %d", round)})
					if err != nil {
						errs[c] = fmt.Errorf("send to %s through daemon %d: %w", name(i), c+1, err)
						return
					}
					seqs[i] = m.Seq
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, nil, err
			}
		}
		answered := map[string]api.Run{}
		deadline := time.Now().Add(2 * time.Minute)
		for len(answered) < agents {
			if time.Now().After(deadline) {
				return 0, nil, fmt.Errorf("round %d: %d of %d agents answered within 2 min (runs by daemon so far: %v)",
					round, len(answered), agents, byDaemon)
			}
			runs, err := clients[polls%len(clients)].Runs(ctx, api.RunQuery{Limit: 2 * agents})
			polls++
			if err != nil {
				return 0, nil, err
			}
			for _, r := range runs {
				agent, _, _ := strings.Cut(r.Agent, "@")
				var i int
				if _, err := fmt.Sscanf(agent, "t%d", &i); err != nil || i >= agents {
					continue
				}
				if r.State == api.RunSucceeded && r.InboxUntilSeq >= seqs[i] {
					if _, seen := answered[agent]; !seen {
						answered[agent] = r
					}
				}
			}
			if len(answered) < agents {
				time.Sleep(10 * time.Millisecond) // polling the store; at most this much late per round
			}
		}
		el := time.Since(t0)
		step("team round %d: %d runs in %s", round, agents, el.Round(time.Millisecond))
		if round == 0 {
			continue
		}
		took += el
		for _, r := range answered {
			byDaemon[r.Daemon]++
		}
	}
	return float64(agents*rounds) / took.Seconds(), byDaemon, nil
}

// spreadSend is the channel_send load of the main table with its 8 outside
// agents' clients spread over the daemons: client i calls the MCP endpoint
// of daemon i mod len(daemons), with a token minted there. With
// -cpuprofile, each daemon's CPU profile under the load is saved beside
// that file as <file>.cluster<col>-<daemon>.
func spreadSend(ctx context.Context, cfg config, daemons []*daemon, col int) (load, error) {
	const clients = 8
	if _, _, err := externalAgents(ctx, daemons[0].client, "bench", "s", clients); err != nil {
		return load{}, err
	}
	urls, tokens := make([]string, clients), make([]string, clients)
	args := make([]map[string]any, clients)
	for i := range clients {
		mc, err := daemons[i%len(daemons)].client.MCPConfig(ctx, api.Target{Agent: fmt.Sprintf("s%d", i), Workflow: "bench", Tag: "main"})
		if err != nil {
			return load{}, err
		}
		urls[i], tokens[i] = mc.URL, mc.Token
		args[i] = map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%clients)}
	}
	pids := make([]int, len(daemons))
	for i, d := range daemons {
		pids[i] = d.pid()
	}
	stops := make([]func(), len(daemons))
	for i, d := range daemons {
		file := ""
		if cfg.cpuprofile != "" {
			file = fmt.Sprintf("%s.cluster%d-%d", cfg.cpuprofile, col, i+1)
		}
		stops[i] = d.profile(ctx, file)
	}
	l, err := goLoadSpread(ctx, urls, tokens, cfg.calls, "channel_send", pids, func(i int) map[string]any { return args[i] })
	for _, stop := range stops {
		stop()
	}
	return l, err
}

// serverVersion is the PostgreSQL server's version, for the table's
// machine line ("unknown" if it cannot be asked).
func serverVersion(ctx context.Context, dsn string) string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "unknown"
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}
