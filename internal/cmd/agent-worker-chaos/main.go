// Command agent-worker-chaos repeats the crash and outage scenarios of the
// reliability probe (issue 27) against real daemons, each from a fresh
// home, so that what they promise can be measured again at any time:
//
//   - sqlite-kill: one daemon on its SQLite file, killed with SIGKILL three
//     times at seeded random moments and restarted each time;
//   - pg-outage: one daemon on PostgreSQL, the server stopped for 5 s,
//     then for 20 s, under load and runs;
//   - pg-kill: two daemons on one PostgreSQL database, one of them killed
//     mid-run and restarted while the other keeps going.
//
// In each, senders post messages through POST /send (as `agent-worker
// send` does) to mock agents that are kept in runs; then the senders stop,
// the agents must become idle with empty inboxes, and what is stored is
// read back through the API. It prints one table row per scenario
// (acknowledged, stored, lost, duplicated, stored without an ack, stuck
// agents, the failed sends) and exits 1 if anything was lost, stored
// twice or left stuck, or the daemon did something else wrong, which it
// lists. `make chaos` runs it; without PostgreSQL only sqlite-kill runs.
//
//	agent-worker-chaos [-bin bin/agent-worker] [-plugins plugins.d] [-duration 35s] [-seed N] [-only sqlite-kill,pg-outage,pg-kill] [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/internal/pgserver"
)

type config struct {
	bin, plugins, work string
	duration           time.Duration // how long each scenario sends
	heartbeat          time.Duration // the daemons' --heartbeat-timeout
	seed               uint64
	senders, agents    int
	pace               time.Duration // a sender's pause between two messages
	only               []string
	keep               bool
}

func main() {
	var cfg config
	var only string
	flag.StringVar(&cfg.bin, "bin", "bin/agent-worker", "the agent-worker binary to run")
	flag.StringVar(&cfg.plugins, "plugins", "plugins.d", "plugins directory (first-party plugins built by `make plugins`)")
	flag.DurationVar(&cfg.duration, "duration", 35*time.Second, "how long each scenario sends; kills and outages fall within it")
	flag.DurationVar(&cfg.heartbeat, "heartbeat", 20*time.Second, "the daemons' --heartbeat-timeout; agents must be quiet within it + 30 s of the senders' end")
	flag.Uint64Var(&cfg.seed, "seed", uint64(time.Now().UnixNano()), "seed of the kill moments (printed, to repeat a run)")
	flag.IntVar(&cfg.senders, "senders", 4, "concurrent senders")
	flag.IntVar(&cfg.agents, "agents", 4, "mock agents the messages mention, in turn")
	flag.DurationVar(&cfg.pace, "pace", 20*time.Millisecond, "each sender's pause between two messages")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run (default all): "+strings.Join(scenarioNames, ", "))
	flag.BoolVar(&cfg.keep, "keep", false, "keep the daemons' homes and logs even when every scenario passed (a failed run always keeps them)")
	flag.Parse()
	if only != "" {
		for _, name := range strings.Split(only, ",") {
			if !slices.Contains(scenarioNames, name) {
				fail(fmt.Errorf("-only %q: the scenarios are %s", name, strings.Join(scenarioNames, ", ")))
			}
			cfg.only = append(cfg.only, name)
		}
	}
	for _, p := range []*string{&cfg.bin, &cfg.plugins} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fail(err)
		}
		*p = abs
	}
	work, err := os.MkdirTemp("", "agent-worker-chaos-")
	if err != nil {
		fail(err)
	}
	cfg.work = work
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rows := run(ctx, cfg)
	stop()
	failed := slices.ContainsFunc(rows, (*row).failed)
	if failed || cfg.keep {
		fmt.Printf("\nThe daemons' homes and logs (chaos-daemon.log) are kept in %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	if failed {
		os.Exit(1)
	}
}

// run runs the chosen scenarios one after another and prints the table.
func run(ctx context.Context, cfg config) []*row {
	start := time.Now()
	step("seed %d (-seed %d repeats this run's kill moments)", cfg.seed, cfg.seed)
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed))
	want := func(name string) bool { return len(cfg.only) == 0 || slices.Contains(cfg.only, name) }
	var rows []*row
	add := func(name string, f func() (*row, error)) {
		if !want(name) || ctx.Err() != nil {
			return
		}
		t := time.Now()
		step("%s: begins", name)
		r, err := f()
		switch {
		case ctx.Err() != nil:
			r.defect("interrupted: the counts are not measured")
		case err != nil:
			r.defect("the scenario stopped early: %v", err)
		}
		r.took = time.Since(t)
		rows = append(rows, r)
	}
	add(sqliteKill, func() (*row, error) { return runSQLiteKill(ctx, cfg, rng) })

	var pg *pgserver.Cluster
	if want(pgOutage) || want(pgKill) {
		step("starting a throwaway PostgreSQL server")
		var err error
		pg, err = pgserver.Launch()
		switch {
		case pgserver.IsUnavailable(err):
			why := postgresHint(err)
			step("PostgreSQL scenarios skipped, sqlite-kill ran alone: %s", why)
			for _, name := range []string{pgOutage, pgKill} {
				if want(name) {
					rows = append(rows, &row{scenario: name, skipped: why})
				}
			}
		case err != nil:
			for _, name := range []string{pgOutage, pgKill} {
				if want(name) {
					r := &row{scenario: name}
					r.defect("PostgreSQL did not start: %v", err)
					rows = append(rows, r)
				}
			}
			pg = nil
		default:
			defer func() {
				if err := pg.Stop(); err != nil {
					step("stop PostgreSQL: %v", err)
				}
			}()
		}
	}
	if pg != nil {
		add(pgOutage, func() (*row, error) { return runPGOutage(ctx, cfg, pg) })
		add(pgKill, func() (*row, error) { return runPGKill(ctx, cfg, pg, rng) })
	}
	fmt.Print(table(cfg, rows, time.Since(start)))
	return rows
}

// table is the Markdown table of the rows, then what happened in each
// scenario and every defect seen.
func table(cfg config, rows []*row, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nagent-worker chaos: seed %d, %s of sending per scenario, %d senders, %d mock agents, --heartbeat-timeout %s; %s in all\n\n",
		cfg.seed, cfg.duration, cfg.senders, cfg.agents, cfg.heartbeat, took.Round(time.Second))
	b.WriteString("| scenario | acknowledged | stored | lost | duplicated | stored without ack | stuck agents | 503 during outage / other | other failed sends | agents' replies | took |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.skipped != "" {
			fmt.Fprintf(&b, "| %s | skipped: %s |||||||||\n", r.scenario, r.skipped)
			continue
		}
		stuck := "0"
		if len(r.stuck) > 0 {
			stuck = fmt.Sprintf("%d: %s", len(r.stuck), strings.Join(r.stuck, "; "))
		}
		outage := "—"
		if r.outages > 0 {
			outage = fmt.Sprintf("%d / %d", total(r.outage503), total(r.outageOther))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s | %s | %d | %s |\n", r.scenario, r.acked, r.stored,
			r.lost, r.dup, r.storedNoAck, stuck, outage, kinds(r.outside), r.replies, r.took.Round(time.Second))
	}
	for _, r := range rows {
		if len(r.notes) == 0 && len(r.defects) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", r.scenario)
		for _, n := range r.notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
		for _, d := range r.defects {
			fmt.Fprintf(&b, "  - DEFECT: %s\n", d)
		}
	}
	verdict := "PASS: nothing acknowledged was lost, nothing was stored twice, no agent was left stuck"
	if slices.ContainsFunc(rows, (*row).failed) {
		verdict = "FAIL: see the table and the defects above"
	}
	fmt.Fprintf(&b, "\n%s\n", verdict)
	return b.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agent-worker-chaos:", err)
	os.Exit(1)
}

// step prints what the harness is doing, for a run that takes minutes.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
