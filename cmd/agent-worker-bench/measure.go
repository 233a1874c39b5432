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
// figure from issue 14's measurement (if any) and the goal.
type row struct {
	what, ours, ceiling, anchor, goal string
}

type table struct {
	machine string
	rows    []row
	took    time.Duration
}

func (t *table) add(r row) {
	t.rows = append(t.rows, r)
	step("%s: %s", r.what, r.ours)
}

func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s in %s.\n\n", time.Now().UTC().Format("2006-01-02"), t.machine, t.took.Round(time.Second))
	b.WriteString("| what | agent-worker | ceiling, same run | TypeScript system | goal |\n|---|---|---|---|---|\n")
	dash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.what, dash(r.ours), dash(r.ceiling), dash(r.anchor), dash(r.goal))
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

// measure runs every scenario in turn and builds the table.
func measure(ctx context.Context, cfg config) (*table, error) {
	start := time.Now()
	t := &table{machine: machine()}
	n := func(full, quick int) int {
		if cfg.quick {
			return quick
		}
		return full
	}

	switch cfg.only {
	case "runs":
		return measureRuns(ctx, cfg, t, n)
	case "search":
		if err := searchScenarios(ctx, cfg, t, n); err != nil {
			return nil, err
		}
		t.took = time.Since(start)
		return t, nil
	case "sandbox":
		if err := sandboxRows(ctx, cfg, t, n); err != nil {
			return nil, err
		}
		t.took = time.Since(start)
		return t, nil
	}
	step("raw SQLite and the store: one write transaction at a time")
	raw, err := rawSQLite(cfg.work, n(20_000, 500))
	if err != nil {
		return nil, fmt.Errorf("raw sqlite: %w", err)
	}
	ours, err := storeAppend(ctx, cfg.work, n(20_000, 500))
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	t.add(row{what: "write transactions, one at a time (store: a channel message with its inbox row)",
		ours: fmt.Sprintf("%.0f txn/s", ours), ceiling: fmt.Sprintf("%.0f txn/s raw SQLite", raw)})

	script, tsErr := tsClient(cfg.tsCache)
	if tsErr != nil {
		step("TypeScript client unavailable: %v", tsErr)
	}

	step("the go-sdk's bare ceiling: a no-op tool in a stateless JSON server")
	bareGo, bareTS, err := measureBare(ctx, cfg, script)
	if err != nil {
		return nil, fmt.Errorf("bare ceiling: %w", err)
	}

	home, err := tempHome(cfg, "main")
	if err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, cfg, home, cfg.sparesOn()...)
	if err != nil {
		return nil, err
	}
	defer d.stop(ctx)
	idleRSS, _ := rss(d.pid())

	step("channel_send, 8 concurrent clients, go-sdk client")
	url, tokens, err := externalAgents(ctx, d.client, "bench", "s", 8)
	if err != nil {
		return nil, err
	}
	args := make([]map[string]any, len(tokens))
	for i := range args {
		args[i] = map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%len(tokens))}
	}
	stopProfile := d.profile(ctx, cfg.cpuprofile)
	goSend, err := goLoad(ctx, url, tokens, cfg.calls, "channel_send", d.pid(), func(i int) map[string]any { return args[i] })
	stopProfile()
	if err != nil {
		return nil, fmt.Errorf("channel_send (go): %w", err)
	}
	t.add(row{what: "`channel_send`, 8 clients, go-sdk client", ours: loadText(goSend),
		ceiling: "bare no-op: " + loadText(bareGo), goal: "≥ ceiling, p99 ≤ 10 ms"})
	t.add(row{what: "daemon CPU per `channel_send` (go-sdk client)", ours: fmt.Sprintf("%.3f ms", goSend.cpuPerCall()),
		ceiling: fmt.Sprintf("%.3f ms bare no-op", bareGo.cpuPerCall()), anchor: "≈0.3 ms", goal: "≤ 0.3 ms"})
	calls := goSend.calls
	if script != "" {
		step("channel_send, 8 concurrent clients, TypeScript client")
		tsSend, err := tsLoad(ctx, script, url, tokens, cfg.calls, "channel_send", args, d.pid())
		if err != nil {
			return nil, fmt.Errorf("channel_send (typescript): %w", err)
		}
		calls += tsSend.calls
		t.add(row{what: "`channel_send`, 8 clients, official TypeScript client", ours: loadText(tsSend),
			ceiling: "bare no-op: " + loadText(bareTS), anchor: "≈2,000 calls/s, p99 19 ms", goal: "≥ ceiling, p99 ≤ 10 ms"})
		t.add(row{what: "daemon CPU per `channel_send` (TypeScript client)", ours: fmt.Sprintf("%.3f ms", tsSend.cpuPerCall()),
			ceiling: fmt.Sprintf("%.3f ms bare no-op", bareTS.cpuPerCall()), anchor: "≈0.3 ms", goal: "≤ 0.3 ms"})
	} else {
		t.add(row{what: "`channel_send`, 8 clients, official TypeScript client", ours: "not measured: " + tsErr.Error()})
	}
	afterCalls, _ := rss(d.pid())
	if cfg.only == "mcp" {
		t.add(row{what: "daemon RSS: idle / after " + fmt.Sprint(calls) + " MCP calls", ours: fmt.Sprintf("%s / %s", mib(idleRSS), mib(afterCalls))})
		t.took = time.Since(start)
		return t, nil
	}

	step("mention → reply with warm spares")
	sp50, sp99, err := mentionReply(ctx, d.client, []*api.Client{d.client}, "echo", n(200, 20))
	if err != nil {
		return nil, fmt.Errorf("mention → reply: %w", err)
	}
	runs := n(200, 20) + 5
	t.add(row{what: "mention → reply in the channel, mock agent, warm spares", ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(sp50), ms(sp99)),
		anchor: "≈35 ms median (in-process mock)", goal: "p50 ≤ 20 ms, p99 ≤ 60 ms"})

	step("ping-pong: two mock agents answering each other")
	pp, err := pingPong(ctx, d.client, "pp", 2, 1, n(400, 20))
	if err != nil {
		return nil, err
	}
	runs += n(400, 20)
	t.add(row{what: "ping-pong, two mock agents, one message in flight", ours: fmt.Sprintf("%.0f messages/s", pp), goal: "≥ 150 messages/s"})
	ring, err := pingPong(ctx, d.client, "ring", 10, 10, n(1000, 40))
	if err != nil {
		return nil, err
	}
	runs += n(1000, 40)
	t.add(row{what: "ring of 10 mock agents, 10 messages in flight", ours: fmt.Sprintf("%.0f messages/s", ring)})

	for _, size := range []int{5, 20} {
		step("`run` of a %d-agent mock workflow to idle", size)
		took, err := runWorkflow(ctx, cfg, d, size)
		if err != nil {
			return nil, err
		}
		runs += 3 * size
		goal := "≤ 0.2 s"
		if size == 20 {
			goal = "≤ 0.5 s"
		}
		t.add(row{what: fmt.Sprintf("`run` of a %d-agent mock workflow until idle (best of 3, CLI included)", size),
			ours: fmt.Sprintf("%.2f s", took.Seconds()), goal: goal})
	}
	afterRuns, _ := rss(d.pid())
	spareRSS, spares := childrenRSS(d.pid())
	t.add(row{what: "daemon RSS: idle / after " + fmt.Sprint(calls) + " MCP calls / after " + fmt.Sprint(runs) + " runs",
		ours: fmt.Sprintf("%s / %s / %s (plugin processes beside it, warm spares and docs providers: %d, %s)", mib(idleRSS), mib(afterCalls), mib(afterRuns), spares, mib(spareRSS)),
		goal: "≤ 30 MiB idle, ≤ 80 MiB after 100k calls and 1,000 runs"})
	d.stop(ctx)

	step("mention → reply, cold starts (no spares)")
	coldHome, err := tempHome(cfg, "cold")
	if err != nil {
		return nil, err
	}
	cold, err := startDaemon(ctx, cfg, coldHome, cfg.sparesOff...)
	if err != nil {
		return nil, err
	}
	cp50, cp99, err := mentionReply(ctx, cold.client, nil, "echo", n(100, 10))
	cold.stop(ctx)
	if err != nil {
		return nil, fmt.Errorf("mention → reply (cold): %w", err)
	}
	t.add(row{what: "mention → reply in the channel, mock agent, cold start", ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(cp50), ms(cp99)),
		anchor: "≈35 ms median (in-process mock)", goal: "p50 ≤ 60 ms"})

	if err := sandboxRows(ctx, cfg, t, n); err != nil {
		return nil, err
	}

	step("my_inbox with 1,000,000 messages in the store")
	ip50, ip99, err := myInbox1M(ctx, cfg, n(2000, 100))
	if err != nil {
		return nil, fmt.Errorf("my_inbox at 1M: %w", err)
	}
	t.add(row{what: "`my_inbox`, 1,000,000 messages, 100 agents (~10,000 unread each)", ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(ip50), ms(ip99))})
	step("search with 1,000,000 messages in the store")
	if err := searchRows(ctx, cfg, t, filepath.Join(cfg.work, "inbox1m"), n(200, 20)); err != nil {
		return nil, fmt.Errorf("search at 1M: %w", err)
	}
	step("channel_send with and without search indexing")
	if err := indexCost(ctx, cfg, t); err != nil {
		return nil, err
	}
	t.took = time.Since(start)
	return t, nil
}

// searchScenarios is `-only search`: my_inbox and search at a million
// messages, and what search indexing costs a channel_send.
func searchScenarios(ctx context.Context, cfg config, t *table, n func(full, quick int) int) error {
	step("my_inbox with 1,000,000 messages in the store")
	ip50, ip99, err := myInbox1M(ctx, cfg, n(2000, 100))
	if err != nil {
		return fmt.Errorf("my_inbox at 1M: %w", err)
	}
	t.add(row{what: "`my_inbox`, 1,000,000 messages, 100 agents (~10,000 unread each)", ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(ip50), ms(ip99))})
	step("search with 1,000,000 messages in the store")
	if err := searchRows(ctx, cfg, t, filepath.Join(cfg.work, "inbox1m"), n(200, 20)); err != nil {
		return fmt.Errorf("search at 1M: %w", err)
	}
	step("channel_send with and without search indexing")
	return indexCost(ctx, cfg, t)
}

// measureBare starts the bench itself as the bare go-sdk server in a
// process of its own and loads it with both clients.
func measureBare(ctx context.Context, cfg config, script string) (goL, tsL load, err error) {
	self, err := os.Executable()
	if err != nil {
		return goL, tsL, err
	}
	cmd := exec.Command(self, "-bare-server")
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
		tsL, err = tsLoad(ctx, script, url, tokens, cfg.calls, "noop", args, cmd.Process.Pid)
	}
	return goL, tsL, err
}

// measureRuns is `-only runs`: mention → reply with spares and cold, and
// ping-pong, for working on the run path.
func measureRuns(ctx context.Context, cfg config, t *table, n func(full, quick int) int) (*table, error) {
	start := time.Now()
	for _, spares := range [][]string{cfg.sparesOn(), cfg.sparesOff} {
		home, err := tempHome(cfg, fmt.Sprintf("runs%d", len(spares)))
		if err != nil {
			return nil, err
		}
		d, err := startDaemon(ctx, cfg, home, spares...)
		if err != nil {
			return nil, err
		}
		profile := cfg.cpuprofile
		warm := len(spares) == 0 || spares[1] != "0"
		if profile != "" && !warm {
			profile += ".cold"
		}
		stop := d.profile(ctx, profile)
		var warmOn []*api.Client
		if warm {
			warmOn = []*api.Client{d.client}
		}
		p50, p99, err := mentionReply(ctx, d.client, warmOn, "echo", n(200, 20))
		stop()
		if err != nil {
			d.stop(ctx)
			return nil, err
		}
		t.add(row{what: fmt.Sprintf("mention → reply (%v)", spares), ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99))})
		if warm {
			pp, err := pingPong(ctx, d.client, "pp", 2, 1, n(400, 20))
			if err != nil {
				d.stop(ctx)
				return nil, err
			}
			t.add(row{what: "ping-pong", ours: fmt.Sprintf("%.0f messages/s", pp)})
		}
		d.stop(ctx)
	}
	t.took = time.Since(start)
	return t, nil
}

// sparesOn is the daemon flags of the scenarios with warm spares.
func (c config) sparesOn() []string {
	if c.spares == "" {
		return nil
	}
	return []string{"--spares", c.spares}
}
