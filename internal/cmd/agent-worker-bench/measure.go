package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// row is one line of the table: what was measured, our figure, the
// ceiling measured in the same run (if any), the TypeScript system's
// figure measured in the same run by -compare (if any), the goal, and how
// the row was measured (printed as its footnote).
type row struct {
	what, ours, ceiling, ts, goal string
	method                        string
}

type table struct {
	machine string
	compare string // what -compare measured ("" without it)
	rows    []row
	took    time.Duration
}

func (t *table) add(r row) {
	t.rows = append(t.rows, r)
	if r.ts != "" {
		step("%s: %s (TypeScript system: %s)", r.what, r.ours, r.ts)
		return
	}
	step("%s: %s", r.what, r.ours)
}

// markdown is the table with a footnote per row saying how it was measured
// (rows measured the same way share one).
func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s in %s.", time.Now().UTC().Format("2006-01-02"), t.machine, t.took.Round(time.Second))
	if t.compare != "" {
		fmt.Fprintf(&b, " TypeScript system: %s.", t.compare)
	} else {
		b.WriteString(" The TypeScript column is measured only with `-compare DIR`.")
	}
	b.WriteString("\n\n| what | agent-worker | ceiling, same run | TypeScript system, same run | goal |\n|---|---|---|---|---|\n")
	dash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	var methods []string
	note := map[string]int{}
	for _, r := range t.rows {
		what := r.what
		if r.method != "" {
			n, ok := note[r.method]
			if !ok {
				methods = append(methods, r.method)
				n = len(methods)
				note[r.method] = n
			}
			what += fmt.Sprintf(" [%d]", n)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", what, dash(r.ours), dash(r.ceiling), dash(r.ts), dash(r.goal))
	}
	if len(methods) > 0 {
		b.WriteString("\nHow each row was measured:\n\n")
		for i, m := range methods {
			fmt.Fprintf(&b, "%d. %s\n", i+1, m)
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func loadText(l load) string {
	return fmt.Sprintf("%.0f calls/s, p50 %s ms, p99 %s ms", l.perSecond(), ms(l.p50), ms(l.p99))
}

func latText(p50, p99 time.Duration) string {
	if p50 >= time.Second {
		return fmt.Sprintf("p50 %.2f s, p99 %.2f s", p50.Seconds(), p99.Seconds())
	}
	return fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99))
}

// cannot is the TypeScript column of a row the TypeScript system has no
// counterpart for, under -compare: a dash and why.
func (b *bench) cannot(why string) string {
	if b.ts == nil {
		return ""
	}
	return "— (" + why + ")"
}

// ratio is ours over the ceiling's calls per second, "0.74×".
func ratio(ours, ceiling load) string {
	if ceiling.perSecond() == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", ours.perSecond()/ceiling.perSecond())
}

// bench is one run of the main table: its settings, the table it fills,
// and the TypeScript system when -compare gave one.
type bench struct {
	cfg config
	t   *table
	ts  *tsSystem // nil without -compare
}

// n is full, or quick under -quick.
func (b *bench) n(full, quick int) int {
	if b.cfg.quick {
		return quick
	}
	return full
}

// measure runs the scenarios cfg.only asks for (every one by default), in
// turn, and builds the table.
func measure(ctx context.Context, cfg config) (*table, error) {
	start := time.Now()
	b := &bench{cfg: cfg, t: &table{machine: machine()}}
	if cfg.compare != "" {
		ts, err := prepareTS(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("-compare: %w", err)
		}
		b.ts = ts
		b.t.compare = ts.describe()
	}
	for _, s := range scenarios {
		if !cfg.wants(s.name) {
			continue
		}
		if err := s.run(b, ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	b.t.took = time.Since(start)
	return b.t, nil
}

// scenarios are the parts of the main table in the order they run; -only
// names them.
var scenarios = []struct {
	name string
	run  func(*bench, context.Context) error
}{
	{"store", (*bench).storeRows},
	{"mcp", (*bench).mcpRows},
	{"mention", (*bench).mentionRows},
	{"pingpong", (*bench).pingPongRows},
	{"run", (*bench).runRows},
	{"rss", (*bench).rssRows},
	{"cold", (*bench).coldRows},
	{"sandbox", func(b *bench, ctx context.Context) error {
		return sandboxRows(ctx, b.cfg, b.t, b.n, b.cannot("no run sandbox"))
	}},
	{"search", (*bench).searchRows},
	{"efforts", (*bench).effortRows},
	{"tracing", (*bench).tracingRows},
}

// storeRows: one write transaction at a time through the store, beside
// raw SQLite.
func (b *bench) storeRows(ctx context.Context) error {
	step("raw SQLite and the store: one write transaction at a time")
	raw, err := rawSQLite(b.cfg.work, b.n(20_000, 500))
	if err != nil {
		return fmt.Errorf("raw sqlite: %w", err)
	}
	ours, err := storeAppend(ctx, b.cfg.work, b.n(20_000, 500))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	b.t.add(row{what: "write transactions, one at a time (store: a channel message with its inbox row)",
		ours: fmt.Sprintf("%.0f txn/s", ours), ceiling: fmt.Sprintf("%.0f txn/s raw SQLite", raw),
		ts: b.cannot("no database: it appends to a JSONL file per channel"),
		method: fmt.Sprintf("%d channel messages, one per transaction, through `store.AppendMessages` on a fresh file (message row, inbox row, loop-guard count), "+
			"beside %[1]d one-row inserts, one per immediate transaction, on a bare SQLite connection with the same pragmas (WAL, `synchronous=NORMAL`).", b.n(20_000, 500))})
	return nil
}

// mcpRows: channel_send from 8 clients of each kind, each on a fresh
// daemon, beside the go-sdk's bare servers loaded by the same clients, and
// the TypeScript system's MCP endpoint loaded by the same clients.
func (b *bench) mcpRows(ctx context.Context) error {
	script, tsErr := tsClient(b.cfg.tsCache)
	if tsErr != nil {
		step("TypeScript client unavailable: %v", tsErr)
	}
	bare := map[string][2]load{}
	for _, mode := range []string{bareStateful, bareStateless} {
		step("the go-sdk's bare ceiling: a no-op tool in a %s JSON-response server", mode)
		g, t, err := measureBare(ctx, b.cfg, mode, script)
		if err != nil {
			return fmt.Errorf("bare %s ceiling: %w", mode, err)
		}
		bare[mode] = [2]load{g, t}
	}
	args := make([]map[string]any, 8)
	for i := range args {
		args[i] = map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%len(args))}
	}
	clients := []struct {
		kind, what string
		i          int // index into bare's pairs
	}{{"go", "go-sdk client", 0}, {"typescript", "official TypeScript client", 1}}
	for _, c := range clients {
		if c.kind == "typescript" && script == "" {
			b.t.add(row{what: "`channel_send`, 8 clients, " + c.what, ours: "not measured: " + tsErr.Error()})
			continue
		}
		step("channel_send, 8 concurrent clients, %s, a fresh daemon", c.what)
		home, err := tempHome(b.cfg, "mcp-"+c.kind)
		if err != nil {
			return err
		}
		d, err := startDaemon(ctx, b.cfg, home, b.cfg.sparesOn()...)
		if err != nil {
			return err
		}
		url, tokens, err := externalAgents(ctx, d.client, "bench", "s", len(args))
		if err != nil {
			d.stop(ctx)
			return err
		}
		var l load
		if c.kind == "go" {
			stopProfile := d.profile(ctx, b.cfg.profileFile(""))
			l, err = goLoad(ctx, url, tokens, b.cfg.calls, "channel_send", d.pid(), func(i int) map[string]any { return args[i] })
			stopProfile()
		} else {
			l, err = tsLoad(ctx, script, same(url, len(tokens)), tokens, b.cfg.calls, "channel_send", args, d.pid())
		}
		d.stop(ctx)
		if err != nil {
			return fmt.Errorf("channel_send (%s): %w", c.kind, err)
		}
		var tsl *load
		var tsFail string // the TypeScript column when its load failed
		if b.ts != nil {
			step("channel_send, 8 concurrent clients, %s, the TypeScript system", c.what)
			if x, err := b.ts.channelSend(ctx, c.kind, script, b.cfg.calls, args); err != nil {
				tsFail = tsFailed("channel_send ("+c.kind+")", err)
			} else {
				tsl = &x
			}
		}
		stateful, stateless := bare[bareStateful][c.i], bare[bareStateless][c.i]
		method := fmt.Sprintf("8 outside agents of one team on a fresh daemon and home (one for each kind of client), each its own MCP session of the row's client, closed loop, "+
			"each call mentioning another member (so every call writes an inbox row and wakes an agent); %d calls after a warm-up of 200 per client. "+
			"Ceiling: the go-sdk's own server in a process of its own with one no-op tool and JSON responses, driven by the same 8 clients in the same run: "+
			"stateful (a session kept across calls, as the daemon keeps them; the honest ceiling) and, in the row below it, stateless (a temporary session per request). "+
			"Daemon CPU per call: its user+system time over the stretch (from `/proc`) over the calls. "+
			"TypeScript system: the same clients and calls against its daemon's MCP endpoint (`/mcp?agent=sN`, 8 standalone agents of its global workflow, whose loops never run).",
			l.calls)
		r := row{what: "`channel_send`, 8 clients, " + c.what, ours: loadText(l),
			ceiling: fmt.Sprintf("stateful bare no-op: %s (ours %s)", loadText(stateful), ratio(l, stateful)),
			goal:    "≥ 1.0× stateful ceiling, p99 ≤ 10 ms", method: method}
		if c.kind == "typescript" {
			r.goal = "≥ 1.1× the TypeScript system, p99 ≤ 10 ms"
		}
		if tsl != nil {
			r.ts = fmt.Sprintf("%s (ours %s)", loadText(*tsl), ratio(l, *tsl))
		} else {
			r.ts = tsFail
		}
		b.t.add(r)
		b.t.add(row{what: "`channel_send`, 8 clients, " + c.what + ", beside the stateless bare server", ours: loadText(l),
			ceiling: fmt.Sprintf("stateless bare no-op: %s (ours %s)", loadText(stateless), ratio(l, stateless)), method: method,
			ts: b.cannot("the row above")})
		cpu := row{what: "daemon CPU per `channel_send` (" + c.what + ")", ours: fmt.Sprintf("%.3f ms", l.cpuPerCall()),
			ceiling: fmt.Sprintf("%.3f ms stateful bare no-op, %.3f ms stateless", stateful.cpuPerCall(), stateless.cpuPerCall()),
			goal:    "≤ 0.35 ms", method: method}
		if tsl != nil {
			cpu.ts = fmt.Sprintf("%.3f ms", tsl.cpuPerCall())
		}
		b.t.add(cpu)
	}
	return nil
}

// profileFile is where -cpuprofile saves the daemon's profile under the
// load of scenario: the go-sdk channel_send load's in the file itself,
// the others' beside it with the scenario's name appended (FILE.mention,
// FILE.cold, FILE.pp, FILE.ring); "" without -cpuprofile.
func (c config) profileFile(scenario string) string {
	if c.cpuprofile == "" || scenario == "" {
		return c.cpuprofile
	}
	return c.cpuprofile + "." + scenario
}

// tsFailed is the TypeScript column of a row whose TypeScript scenario
// failed: the table goes on, and says why.
func tsFailed(what string, err error) string {
	step("TypeScript system: %s: %v", what, err)
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "|", "/")), " ") // one table cell
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return "failed: " + msg
}

// same is n copies of url.
func same(url string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = url
	}
	return urls
}

// mentionRows: mention → reply with warm spares, and a CLI send until the
// reply is seen, each on a fresh daemon.
func (b *bench) mentionRows(ctx context.Context) error {
	step("mention → reply with warm spares, a fresh daemon")
	count := b.n(200, 20)
	p50, p99, err := b.onFreshDaemon(ctx, "mention", b.cfg.sparesOn(), func(d *daemon) (time.Duration, time.Duration, error) {
		defer d.profile(ctx, b.cfg.profileFile("mention"))()
		return mentionReply(ctx, d.client, []*api.Client{d.client}, "echo", count)
	})
	if err != nil {
		return fmt.Errorf("mention → reply: %w", err)
	}
	r := row{what: "mention → reply in the channel, mock agent, warm spares", ours: latText(p50, p99),
		goal: "p50 ≤ 12 ms warm",
		method: fmt.Sprintf("A fresh daemon and home (warm spares on): `POST /send` mentioning a mock agent that answers with a message, "+
			"until the reply is on the channel's event stream (`/peek?follow`); one at a time, each after the previous run ended and the backend's spare is ready "+
			"(every run a fresh plugin process); %d samples after 5 warm-ups. TypeScript system: a workflow of one mock agent started in a fresh daemon and home, "+
			"the mention sent by `channel_send` through the workflow's MCP server (what wakes its agent loop at once), until the reply is in its `channel.jsonl` "+
			"(read every 1 ms); its mock runs in the daemon's process.", count)}
	if b.ts != nil {
		step("mention → reply, the TypeScript system")
		if tp50, tp99, err := b.ts.mentionReply(ctx, count); err != nil {
			r.ts = tsFailed("mention → reply", err)
		} else {
			r.ts = latText(tp50, tp99)
		}
	}
	b.t.add(r)

	step("CLI send → reply seen, a fresh daemon")
	sends := b.n(50, 5)
	p50, p99, err = b.onFreshDaemon(ctx, "clisend", b.cfg.sparesOn(), func(d *daemon) (time.Duration, time.Duration, error) {
		return cliSendReply(ctx, b.cfg, d, sends)
	})
	if err != nil {
		return fmt.Errorf("CLI send → reply: %w", err)
	}
	r = row{what: "`agent-worker send` to a mock agent → its reply seen (CLI process included)", ours: latText(p50, p99),
		method: fmt.Sprintf("A fresh daemon and home (warm spares on): `agent-worker send echo ping` run as a process, until the mock agent's reply is on "+
			"the channel's event stream; %d samples after 2 warm-ups, each after the previous run ended and the spare is ready. TypeScript system: "+
			"`agent-worker send echo@wf \"@echo ping\"` (its CLI under bun, which appends to the channel file) to a workflow of one mock agent in a fresh "+
			"daemon, until the reply is in `channel.jsonl`; nothing wakes its loop, which polls every 5 s (its default); %d samples.", sends, b.n(10, 2))}
	if b.ts != nil {
		step("CLI send → reply seen, the TypeScript system")
		tp50, tp99, err := b.ts.cliSendReply(ctx, b.n(10, 2))
		if err != nil {
			return fmt.Errorf("TypeScript system: CLI send → reply: %w", err)
		}
		r.ts = latText(tp50, tp99)
	}
	b.t.add(r)
	return nil
}

// onFreshDaemon starts a daemon with flags in a fresh home named name,
// runs f on it and stops it.
func (b *bench) onFreshDaemon(ctx context.Context, name string, flags []string,
	f func(*daemon) (time.Duration, time.Duration, error)) (time.Duration, time.Duration, error) {
	home, err := tempHome(b.cfg, name)
	if err != nil {
		return 0, 0, err
	}
	d, err := startDaemon(ctx, b.cfg, home, flags...)
	if err != nil {
		return 0, 0, err
	}
	defer d.stop(ctx)
	return f(d)
}

// pingPongRows: two mock agents answering each other, and a ring of ten,
// each a workflow running on a fresh daemon, measured over a fixed window.
func (b *bench) pingPongRows(ctx context.Context) error {
	window := time.Duration(b.n(10, 2)) * time.Second
	step("the ceiling: bare go-plugin processes started, called once and stopped, two at a time, over %s", window)
	rate, host, plugin, err := pluginCycles(ctx, window)
	if err != nil {
		return err
	}
	ceiling := fmt.Sprintf("bare go-plugin process per message: %.0f/s (CPU per message: host %s ms, plugin process %s ms)", rate, ms(host), ms(plugin))
	for _, v := range []struct {
		name          string
		agents        int
		what, goal    string
		inFlightAtTop string
	}{
		{"pp", 2, "ping-pong, two mock agents in a workflow, one message in flight", "≥ 150 messages/s", "one message"},
		{"ring", 10, "ring of 10 mock agents in a workflow, each mentioning the next, 10 messages in flight at the start", "≥ 300 messages/s", "ten messages"},
	} {
		step("%s: %s over %s, a fresh daemon", v.name, v.what, window)
		rate, cost, err := pingPong(ctx, b.cfg, v.name, v.agents, window)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		r := row{what: v.what, ours: fmt.Sprintf("%.0f messages/s (%s)", rate, cost), goal: v.goal, ceiling: ceiling,
			method: fmt.Sprintf("A fresh daemon and home (warm spares on) runs a workflow (`loop_guard: {max_rounds: 0}`) of %d mock agents, agent *i*'s script a "+
				"single reply mentioning agent *i*+1 (mod %[1]d), so every reply is one run of a fresh plugin process; the kickoff mentions %s, putting %s in flight "+
				"(a run that finds two messages answers once). After %d agent messages of warm-up, the figure is the channel's seq advance over a fixed %s "+
				"window (`/peek` before and after) divided by the window; the CPU per message is the daemon's and its reaped plugin processes' (`/proc`, utime+stime and "+
				"cutime+cstime) over the window, divided by the messages. TypeScript system: the same workflow in a fresh daemon, its agents `claude` "+
				"agents whose `claude` is a stand-in (a node script: MCP initialize, then `channel_send` of the mention through the workflow's MCP server, "+
				"nothing printed) because its mock strips every @ from its reply; counted as the agents' messages added to `channel.jsonl` over the window. "+
				"Ceiling: what a fresh go-plugin process per message costs with nothing of ours in it: the bench starts itself as a bare go-plugin plugin "+
				"(gRPC, no service of its own), handshakes, makes one call (go-plugin's health check), stops it as go-plugin stops a plugin and reaps it, "+
				"two such cycles at a time for %s; CPU per cycle from `/proc` (the bench's own, and its reaped children's).",
				v.agents, firstAgents(v.agents), v.inFlightAtTop, warmMessages(v.agents), window, window)}
		if b.ts != nil {
			step("%s, the TypeScript system", v.name)
			if trate, err := b.ts.pingPong(ctx, v.name, v.agents, window); err != nil {
				r.ts = tsFailed(v.name, err)
			} else {
				r.ts = fmt.Sprintf("%.1f messages/s", trate)
			}
		}
		b.t.add(r)
	}
	return nil
}

// firstAgents says whom the kickoff of a ping-pong workflow mentions.
func firstAgents(agents int) string {
	if agents == 2 {
		return "the first"
	}
	return "all of them"
}

// runRows: `agent-worker run` of a 5- and a 20-agent mock workflow, each
// size on a fresh daemon.
func (b *bench) runRows(ctx context.Context) error {
	tries := 3
	for _, size := range []int{5, 20} {
		step("`run` of a %d-agent mock workflow to idle, a fresh daemon", size)
		home, err := tempHome(b.cfg, fmt.Sprintf("run%d", size))
		if err != nil {
			return err
		}
		d, err := startDaemon(ctx, b.cfg, home, b.cfg.sparesOn()...)
		if err != nil {
			return err
		}
		took, err := runWorkflow(ctx, b.cfg, d, size, tries)
		d.stop(ctx)
		if err != nil {
			return err
		}
		goal := "≤ 0.2 s"
		if size == 20 {
			goal = "≤ 0.25 s"
		}
		r := row{what: fmt.Sprintf("`run` of a %d-agent mock workflow until idle (best of %d, CLI included)", size, tries),
			ours: fmt.Sprintf("%.2f s", took.Seconds()), goal: goal,
			method: fmt.Sprintf("`agent-worker run team.yaml --tag rN` as a process, of a workflow of N mock agents (default script: one message each) whose "+
				"kickoff mentions them all, until the CLI exits with the team idle; %d tags in a row on one fresh daemon and home per size, the best reported. "+
				"TypeScript system: its `agent-worker run team.yaml --tag rN` (under bun, the whole workflow in the CLI process; its idle check polls every 1 s "+
				"and confirms after 2 s), fresh home, the best of %d.", tries, b.tsTries())}
		if b.ts != nil {
			step("`run` of a %d-agent mock workflow, the TypeScript system", size)
			if tt, err := b.ts.runWorkflow(ctx, size, b.tsTries()); err != nil {
				r.ts = tsFailed(fmt.Sprintf("run of %d agents", size), err)
			} else {
				r.ts = fmt.Sprintf("%.2f s (best of %d)", tt.Seconds(), b.tsTries())
			}
		}
		b.t.add(r)
	}
	return nil
}

// tsTries is how many `run`s of each size the TypeScript system gets (each
// takes seconds).
func (b *bench) tsTries() int { return b.n(3, 1) }

// rssRows: a fresh daemon's resident set idle, after MCP calls and after
// runs.
func (b *bench) rssRows(ctx context.Context) error {
	calls, runs := b.n(100_000, 2_000), b.n(1_000, 20)
	step("daemon RSS: a fresh daemon, idle, after %d MCP calls, after %d runs", calls, runs)
	home, err := tempHome(b.cfg, "rss")
	if err != nil {
		return err
	}
	d, err := startDaemon(ctx, b.cfg, home, b.cfg.sparesOn()...)
	if err != nil {
		return err
	}
	defer d.stop(ctx)
	idle, err := rss(d.pid())
	if err != nil {
		return err
	}
	url, tokens, err := externalAgents(ctx, d.client, "bench", "s", 8)
	if err != nil {
		return err
	}
	if _, err := goLoad(ctx, url, tokens, calls, "channel_send", 0, func(i int) map[string]any {
		return map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%len(tokens))}
	}); err != nil {
		return err
	}
	afterCalls, _ := rss(d.pid())
	if _, _, err := mentionReply(ctx, d.client, []*api.Client{d.client}, "echo", runs-5); err != nil {
		return err
	}
	afterRuns, _ := rss(d.pid())
	spareRSS, spares := childrenRSS(d.pid())
	r := row{what: fmt.Sprintf("daemon RSS: idle / after %d MCP calls / after %d runs", calls, runs),
		ours: fmt.Sprintf("%s / %s / %s (plugin processes beside it, warm spares and docs providers: %d, %s)", mib(idle), mib(afterCalls), mib(afterRuns), spares, mib(spareRSS)),
		goal: "≤ 40 MiB idle, ≤ 80 MiB after 100k calls and 1,000 runs",
		method: fmt.Sprintf("A fresh daemon and home (warm spares on): its VmRSS (`/proc`) when idle after start, after %d `channel_send` calls of the "+
			"8 go-sdk clients (besides 200 each of warm-up), then after %d mention → reply runs one at a time; the plugin processes beside it are counted apart. "+
			"TypeScript system: the same on a fresh daemon (the calls through its `/mcp?agent=sN`, the runs by its in-process mock in a workflow).", calls, runs)}
	if b.ts != nil {
		step("daemon RSS, the TypeScript system")
		if s, err := b.ts.rss(ctx, calls, runs); err != nil {
			r.ts = tsFailed("RSS", err)
		} else {
			r.ts = s
		}
	}
	b.t.add(r)
	return nil
}

// coldRows: mention → reply with no spares (a cold start every run).
func (b *bench) coldRows(ctx context.Context) error {
	step("mention → reply, cold starts (no spares), a fresh daemon")
	count := b.n(100, 10)
	p50, p99, err := b.onFreshDaemon(ctx, "cold", b.cfg.sparesOff, func(d *daemon) (time.Duration, time.Duration, error) {
		defer d.profile(ctx, b.cfg.profileFile("cold"))()
		return mentionReply(ctx, d.client, nil, "echo", count)
	})
	if err != nil {
		return fmt.Errorf("mention → reply (cold): %w", err)
	}
	b.t.add(row{what: "mention → reply in the channel, mock agent, cold start", ours: latText(p50, p99), goal: "p50 ≤ 60 ms",
		ts: b.cannot("its mock runs inside its daemon: there is no process to start"),
		method: fmt.Sprintf("As mention → reply with warm spares, on a fresh daemon started with `--spares 0`: every run starts its plugin process "+
			"when the message arrives; %d samples after 5 warm-ups.", count)})
	return nil
}

// searchRows: my_inbox and search on a store seeded with a million
// messages (20,000 under -quick), and what search indexing costs a
// channel_send.
func (b *bench) searchRows(ctx context.Context) error {
	total := b.n(1_000_000, 20_000)
	step("my_inbox with %s messages in the store", count(total))
	calls := b.n(2000, 100)
	ip50, ip99, err := myInbox1M(ctx, b.cfg, total, calls)
	if err != nil {
		return fmt.Errorf("my_inbox at %s: %w", count(total), err)
	}
	b.t.add(row{what: fmt.Sprintf("`my_inbox`, %s messages, 100 agents (~%s unread each)", count(total), count(total/100)), ours: latText(ip50, ip99),
		ts: b.cannot("not measured: its inbox is a scan of the channel's JSONL file, and the bench seeds only our store"),
		method: fmt.Sprintf("The only rows on a big store: a fresh home whose store is seeded (directly, daemon stopped) with %s messages among "+
			"100 outside agents (about %s unread each), then a daemon on it; `my_inbox` through MCP, %d calls one at a time across the agents, "+
			"the first call of each agent left out.", count(total), count(total/100), calls)})
	step("search with %s messages in the store", count(total))
	if err := searchRows(ctx, b.cfg, b.t, filepath.Join(b.cfg.work, "inbox1m"), total, b.n(200, 20), b.cannot("no search")); err != nil {
		return fmt.Errorf("search at %s: %w", count(total), err)
	}
	step("channel_send with and without search indexing")
	return indexCost(ctx, b.cfg, b.t, b.cannot("no search index"))
}

// measureBare starts the bench itself as the bare go-sdk server of mode in
// a process of its own and loads it with both clients (the TypeScript one
// when script is set).
func measureBare(ctx context.Context, cfg config, mode, script string) (goL, tsL load, err error) {
	self, err := os.Executable()
	if err != nil {
		return goL, tsL, err
	}
	cmd := exec.Command(self, "-bare-server", mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return goL, tsL, err
	}
	if err := cmd.Start(); err != nil {
		return goL, tsL, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return goL, tsL, fmt.Errorf("bare server: %w", err)
	}
	url = strings.TrimSpace(url)
	tokens := make([]string, 8)
	args := make([]map[string]any, len(tokens))
	for i := range args {
		args[i] = map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%len(tokens))}
	}
	if goL, err = goLoad(ctx, url, tokens, cfg.calls, "noop", cmd.Process.Pid, func(i int) map[string]any { return args[i] }); err != nil {
		return goL, tsL, err
	}
	if script != "" {
		tsL, err = tsLoad(ctx, script, same(url, len(tokens)), tokens, cfg.calls, "noop", args, cmd.Process.Pid)
	}
	return goL, tsL, err
}

// sparesOn is the daemon flags of the scenarios with warm spares.
func (c config) sparesOn() []string {
	if c.spares == "" {
		return nil
	}
	return []string{"--spares", c.spares}
}
