package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/pgserver"
)

// The scenarios, in the order they run.
const (
	sqliteKill = "sqlite-kill"
	pgOutage   = "pg-outage"
	pgKill     = "pg-kill"
)

var scenarioNames = []string{sqliteKill, pgOutage, pgKill}

// scenario is what every scenario has: its row, its daemons (stopped and
// checked for leftover plugin processes at the end) and its clock.
type scenario struct {
	cfg     config
	r       *row
	daemons []*daemon
	t0      time.Time // when the senders started
}

func newScenario(cfg config, name string) *scenario {
	return &scenario{cfg: cfg, r: &row{scenario: name}}
}

// daemon adds a started daemon to the scenario.
func (s *scenario) daemon(ctx context.Context, extra ...string) (*daemon, error) {
	d, err := newDaemon(s.cfg, s.r.scenario, fmt.Sprintf("daemon %d", len(s.daemons)+1), extra...)
	if err != nil {
		return nil, err
	}
	if err := d.start(ctx); err != nil {
		return nil, err
	}
	s.daemons = append(s.daemons, d)
	return d, nil
}

// close stops the scenario's daemons and counts the plugin processes that
// outlived them.
func (s *scenario) close(ctx context.Context) {
	for _, d := range s.daemons {
		d.stop(ctx)
	}
	if n := leftovers(s.daemons); n > 0 {
		s.r.defect("%d plugin processes outlived their daemons (killed by the harness)", n)
	}
}

// at waits until the scenario's clock reads d.
func (s *scenario) at(ctx context.Context, d time.Duration) {
	ctxSleep(ctx, time.Until(s.t0.Add(d)))
}

func (s *scenario) clock() string { return time.Since(s.t0).Round(100 * time.Millisecond).String() }

// runSQLiteKill: one daemon on its SQLite file, senders going, killed with
// SIGKILL three times at seeded random moments and restarted at once on
// the same home each time.
func runSQLiteKill(ctx context.Context, cfg config, rng *rand.Rand) (r *row, err error) {
	s := newScenario(cfg, sqliteKill)
	defer s.close(ctx)
	d, err := s.daemon(ctx)
	if err != nil {
		return s.r, err
	}
	agents, err := createAgents(ctx, d.client(), cfg.agents, 300*time.Millisecond)
	if err != nil {
		return s.r, err
	}
	since, err := marker(ctx, d.client(), s.r.scenario)
	if err != nil {
		return s.r, err
	}
	kills := moments(rng, cfg.duration, 3)
	l := startLoad(s.r.scenario, s.daemons, agents, cfg.senders, cfg.pace)
	s.t0 = time.Now()
	var back time.Duration // when the daemon last answered again
	for i, at := range kills {
		// A kill right after a restart would find nothing in flight.
		s.at(ctx, max(at, back+3*time.Second))
		runs := d.inFlight(ctx)
		if err := d.kill(); err != nil {
			l.halt()
			return s.r, err
		}
		killed := s.clock()
		t := time.Now()
		if err := d.start(ctx); err != nil {
			l.halt()
			return s.r, fmt.Errorf("restart after kill %d: %w", i+1, err)
		}
		back = time.Since(s.t0)
		s.r.note("kill -9 %d at %s with %d runs in flight; answering again %s later",
			i+1, killed, runs, time.Since(t).Round(10*time.Millisecond))
	}
	s.at(ctx, cfg.duration)
	return s.r, settle(ctx, cfg, s.r, l, []*api.Client{d.client()}, since)
}

// runPGOutage: one daemon on PostgreSQL, agents in runs that last a
// second, senders going; the server is stopped (pg_ctl stop -m fast) for
// 5 s, started, then stopped again for 20 s and started.
func runPGOutage(ctx context.Context, cfg config, pg *pgserver.Cluster) (r *row, err error) {
	s := newScenario(cfg, pgOutage)
	defer s.close(ctx)
	dsn, err := pg.CreateDatabase(ctx, "chaos_outage")
	if err != nil {
		return s.r, err
	}
	d, err := s.daemon(ctx, "--store", dsn)
	if err != nil {
		return s.r, err
	}
	agents, err := createAgents(ctx, d.client(), cfg.agents, time.Second)
	if err != nil {
		return s.r, err
	}
	since, err := marker(ctx, d.client(), s.r.scenario)
	if err != nil {
		return s.r, err
	}
	gap := cfg.duration * 15 / 100
	l := startLoad(s.r.scenario, s.daemons, agents, cfg.senders, cfg.pace)
	s.t0 = time.Now()
	for _, down := range []time.Duration{5 * time.Second, 20 * time.Second} {
		ctxSleep(ctx, gap)
		if err := s.outage(ctx, pg, d, l, down); err != nil {
			l.halt()
			return s.r, err
		}
	}
	ctxSleep(ctx, gap)
	s.r.outages = 2
	return s.r, settle(ctx, cfg, s.r, l, []*api.Client{d.client()}, since)
}

// outage stops PostgreSQL for down, asks the daemon's /health halfway
// through (it must answer, showing the store unreachable), and starts the
// server again.
func (s *scenario) outage(ctx context.Context, pg *pgserver.Cluster, d *daemon, l *load, down time.Duration) error {
	begin := s.clock()
	end := l.beginOutage()
	defer end()
	t := time.Now()
	runs := d.inFlight(ctx)
	if err := pg.Pause(); err != nil {
		return err
	}
	stopTook := time.Since(t)
	health := make(chan string, 1)
	go func() {
		ctxSleep(ctx, down/2)
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		h, err := d.client().Health(hctx)
		switch {
		case err != nil:
			health <- "failed: " + err.Error()
		case h.Store.UnreachableSince == nil:
			health <- "answered without the store unreachable"
		default:
			health <- "ok"
		}
	}()
	ctxSleep(ctx, down)
	t = time.Now()
	if err := pg.Resume(); err != nil {
		return err
	}
	h := <-health
	s.r.note("PostgreSQL stopped at %s with %d runs in flight (stop took %s), down %s, started again in %s; /health halfway: %s",
		begin, runs, stopTook.Round(10*time.Millisecond), down, time.Since(t).Round(10*time.Millisecond), h)
	if h != "ok" {
		s.r.defect("/health during the %s outage %s", down, h)
	}
	return nil
}

// runPGKill: two daemons on one PostgreSQL database (a cluster), senders
// spread over both, agents in runs; the second is killed with SIGKILL at
// a seeded moment while it has a run in flight and restarted a seeded
// 2-12 s later, while the first keeps going.
func runPGKill(ctx context.Context, cfg config, pg *pgserver.Cluster, rng *rand.Rand) (r *row, err error) {
	s := newScenario(cfg, pgKill)
	defer s.close(ctx)
	dsn, err := pg.CreateDatabase(ctx, "chaos_kill")
	if err != nil {
		return s.r, err
	}
	for range 2 {
		if _, err := s.daemon(ctx, "--store", dsn); err != nil {
			return s.r, err
		}
	}
	d1, d2 := s.daemons[0], s.daemons[1]
	if err := members(ctx, s.daemons); err != nil {
		return s.r, err
	}
	agents, err := createAgents(ctx, d1.client(), cfg.agents, 500*time.Millisecond)
	if err != nil {
		return s.r, err
	}
	since, err := marker(ctx, d1.client(), s.r.scenario)
	if err != nil {
		return s.r, err
	}
	killAt := cfg.duration * time.Duration(30+rng.IntN(21)) / 100
	restartAfter := 2*time.Second + time.Duration(rng.Int64N(int64(10*time.Second)))
	l := startLoad(s.r.scenario, s.daemons, agents, cfg.senders, cfg.pace)
	s.t0 = time.Now()
	s.at(ctx, killAt)
	// Mid-run: the first moment from then on (within 5 s) at which daemon 2
	// has a run in flight.
	runs := d2.inFlight(ctx)
	for wait := time.Now().Add(5 * time.Second); runs <= 0 && time.Now().Before(wait); runs = d2.inFlight(ctx) {
		ctxSleep(ctx, 20*time.Millisecond)
	}
	if err := d2.kill(); err != nil {
		l.halt()
		return s.r, err
	}
	killed := s.clock()
	ctxSleep(ctx, restartAfter)
	t := time.Now()
	if err := d2.start(ctx); err != nil {
		l.halt()
		return s.r, fmt.Errorf("restart daemon 2: %w", err)
	}
	s.r.note("kill -9 of daemon 2 at %s with %d runs in flight there; restarted %s later, answering in %s",
		killed, runs, restartAfter.Round(100*time.Millisecond), time.Since(t).Round(10*time.Millisecond))
	s.at(ctx, cfg.duration)
	return s.r, settle(ctx, cfg, s.r, l, []*api.Client{d1.client(), d2.client()}, since)
}

// moments are n seeded moments within the middle 80% of d, one in each
// n-th of it, so that the daemon has time to come back between two.
func moments(rng *rand.Rand, d time.Duration, n int) []time.Duration {
	span := d * 8 / 10 / time.Duration(n)
	out := make([]time.Duration, n)
	for i := range n {
		out[i] = d/10 + time.Duration(i)*span + span/10 + time.Duration(rng.Int64N(int64(span*8/10)))
	}
	return out
}

// members waits until every daemon of a cluster sees all of them alive,
// so that no scenario starts while one is still joining.
func members(ctx context.Context, daemons []*daemon) error {
	deadline := time.Now().Add(30 * time.Second)
	for i, d := range daemons {
		for {
			h, err := d.client().Health(ctx)
			if err != nil {
				return err
			}
			alive := 0
			if h.Cluster != nil {
				for _, m := range h.Cluster.Members {
					if m.Alive {
						alive++
					}
				}
			}
			if alive >= len(daemons) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("daemon %d sees %d of %d members alive after 30 s", i+1, alive, len(daemons))
			}
			ctxSleep(ctx, 100*time.Millisecond)
		}
	}
	return nil
}

// postgresHint says how to get the server binaries internal/pgserver starts.
func postgresHint(err error) string {
	return strings.TrimSpace(fmt.Sprintf("%v; install Debian's postgresql (sudo apt-get install postgresql) to run %s and %s too",
		err, pgOutage, pgKill))
}
