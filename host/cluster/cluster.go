package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/internal/backoff"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// Defaults of Config.
const (
	DefaultHeartbeat = time.Second
	DefaultLease     = 10 * time.Second
)

// Config is what a member needs from the daemon.
type Config struct {
	DB *store.DB
	// ID is this daemon process's member id, the one the store stamps on
	// its runs; Address is where its HTTP API listens.
	ID, Address string
	Bus         *team.Bus
	Log         hclog.Logger
	// Workers is how many turns this member runs at once: its share of
	// the queue (the daemon's --max-concurrent).
	Workers int
	// Heartbeat is how often the member proves alive; Lease how long a
	// silent member stays one before the others take its work back.
	Heartbeat, Lease time.Duration
	// RescueAfter is River's last resort for a job whose worker vanished
	// without the member being found dead: longer than any run may take.
	RescueAfter time.Duration
	// Turn runs an agent's turn (scheduler.Scheduler.Turn); RetryDelay is
	// the backoff after failed attempt n.
	// complete, passed to Turn, ends the job in the run's settle.
	// fired is a scheduled wake-up's due time, zero for a plain turn.
	Turn       func(ctx context.Context, key store.AgentKey, fired time.Time, attempt, attempts int, complete store.TxHook) (busy bool, err error)
	RetryDelay func(n int) time.Duration
	// Attempts per turn (default 3).
	Attempts int
	// KillOrphan is called for each plugin process of a dead member that
	// ran on this host (plugins.KillLeftover).
	KillOrphan func(w store.Worker)
	// Recover frees what this member recorded as running but no longer
	// holds (a write lost to an outage); it is called after each
	// heartbeat that follows failed ones (the store is back) and every
	// RecoverEvery otherwise. nil never recovers.
	Recover      func(ctx context.Context)
	RecoverEvery time.Duration
	// Notify hears of each member found dead (host/notify); nil tells no
	// one.
	Notify Notifier
}

// Member is this daemon as a member of the cluster.
type Member struct {
	cfg   Config
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	host  string

	// Kept by Run's loop alone: whether the last heartbeat failed, and
	// when Recover last ran.
	unreachable bool
	recovered   time.Time
}

// riverLock serializes River's migrations between members starting at
// once ("aw-river" in ASCII).
const riverLock int64 = 0x61772d7269766572

// Join brings River's schema up to date, registers the member and builds
// its queue client; Run starts them.
func Join(ctx context.Context, cfg Config) (*Member, error) {
	pool := cfg.DB.PostgresPool()
	if pool == nil {
		return nil, errors.New("cluster mode needs a PostgreSQL store")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.RescueAfter <= 0 {
		cfg.RescueAfter = time.Hour
	}
	if cfg.RecoverEvery <= 0 {
		cfg.RecoverEvery = cfg.Lease
	}
	host, _ := os.Hostname()
	m := &Member{cfg: cfg, pool: pool, host: host}
	driver := riverpgxv5.New(pool)
	if err := m.migrateRiver(ctx, driver); err != nil {
		return nil, fmt.Errorf("job queue schema: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &turnWorker{m: m})
	river.AddWorker(workers, &fireWorker{m: m})
	var err error
	m.river, err = river.NewClient(driver, &river.Config{
		ID:      cfg.ID,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers: workers,
		// A wake becomes a run within milliseconds: the insert notifies
		// every member, and a member may fetch again this soon after.
		FetchCooldown:        5 * time.Millisecond,
		FetchPollInterval:    time.Second,
		MaxAttempts:          cfg.Attempts,
		RescueStuckJobsAfter: cfg.RescueAfter,
		JobTimeout:           -1, // the supervisor's run timeouts bound a turn
		Logger:               slog.New(slog.NewTextHandler(cfg.Log.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	// Jobs this member's previous process was working when it died wait
	// for it no longer: it starts with none running.
	if _, err := m.releaseJobs(ctx, `= $1`, cfg.ID); err != nil {
		return nil, fmt.Errorf("release this member's old jobs: %w", err)
	}
	if err := cfg.DB.RegisterDaemon(ctx, store.Daemon{ID: cfg.ID, Host: host, PID: os.Getpid(), Address: cfg.Address, Version: api.Version}); err != nil {
		return nil, fmt.Errorf("register in the cluster: %w", err)
	}
	return m, nil
}

func (m *Member) migrateRiver(ctx context.Context, driver *riverpgxv5.Driver) error {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", riverLock); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", riverLock) //nolint:errcheck // the session ends with the connection anyway
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// Run works the queue, keeps the member alive, takes back dead members'
// work and relays events until ctx ends; then it stops taking jobs, lets
// the running ones end (their runs are cancelled with the daemon) and
// leaves the cluster.
func (m *Member) Run(ctx context.Context) error {
	if err := startQueue(ctx, m.river.Start, m.pool.Ping, m.cfg.Log); err != nil {
		return fmt.Errorf("start the job queue: %w", err)
	}
	if ctx.Err() != nil {
		return m.cfg.DB.DaemonStopped(context.WithoutCancel(ctx), m.cfg.ID)
	}
	relay := newRelay(m)
	done := make(chan struct{}, 2)
	go func() { relay.send(ctx); done <- struct{}{} }()
	go func() { relay.listen(ctx); done <- struct{}{} }()
	tick := time.NewTicker(m.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := m.river.Stop(stopCtx); err != nil {
				m.cfg.Log.Warn("stop the job queue", "error", err)
			}
			<-done
			<-done
			return m.cfg.DB.DaemonStopped(stopCtx, m.cfg.ID)
		case <-tick.C:
			m.beat(ctx)
		}
	}
}

// startBackoff spaces the job queue's start attempts while the store does
// not answer.
var startBackoff = backoff.Policy{Base: 200 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.1}

// startQueue starts the job queue (start), waiting out a store that does
// not answer (ping fails too) the way an outage later on is waited out:
// a PostgreSQL restart as the daemon comes up must not stop it. Any
// other failure is returned at once; nil when ctx ends first.
func startQueue(ctx context.Context, start, ping func(context.Context) error, log hclog.Logger) error {
	for n := 1; ; n++ {
		err := start(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if ping(ctx) == nil {
			return err // the store answers: the trouble is not an outage
		}
		d := startBackoff.Delay(n, rand.Float64())
		log.Warn("start the job queue: the store does not answer; trying again", "error", err, "in", d.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
	}
}

// beat proves the member alive and takes back the work of any member
// whose lease ran out.
func (m *Member) beat(ctx context.Context) {
	if err := m.cfg.DB.DaemonHeartbeat(ctx, m.cfg.ID); err != nil {
		if ctx.Err() != nil {
			return
		}
		m.unreachable = true
		m.cfg.Log.Error("cluster heartbeat", "error", err)
		if api.ErrorCode(err) == api.CodeConflict {
			// Found dead while stalled: its runs were taken back. Join
			// again, as a member with nothing in flight it did not start.
			_ = m.cfg.DB.RegisterDaemon(ctx, store.Daemon{ID: m.cfg.ID, Host: m.host, PID: os.Getpid(), Address: m.cfg.Address, Version: api.Version})
		}
		return
	}
	if m.cfg.Recover != nil && (m.unreachable || time.Since(m.recovered) >= m.cfg.RecoverEvery) {
		if m.unreachable {
			m.cfg.Log.Info("the store is reachable again; freeing what its outage stranded")
		}
		m.cfg.Recover(ctx)
		m.recovered = time.Now()
	}
	m.unreachable = false
	dead, err := m.cfg.DB.RecoverDeadDaemons(ctx, m.cfg.Lease)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Log.Warn("take back dead members' work", "error", err)
		}
		return
	}
	if len(dead) == 0 {
		return
	}
	// Their turns still hold River's jobs (running, by a worker that is
	// gone): hand them back to the queue now rather than at River's rescue,
	// so the agents' next turns are not folded into jobs no one works.
	n, err := m.releaseJobs(ctx, `IN (SELECT id FROM daemons WHERE stopped_at <> 0)`)
	if err != nil {
		m.cfg.Log.Warn("release dead members' jobs", "error", err)
	}
	for _, r := range dead {
		m.cfg.Log.Warn("a cluster member stopped responding; its work was taken back",
			"member", r.Daemon.ID, "host", r.Daemon.Host, "runs", len(r.Runs), "agents", len(r.Agents), "jobs", n)
		if r.Daemon.Host == m.host && m.cfg.KillOrphan != nil {
			for _, w := range r.Workers {
				m.cfg.KillOrphan(w)
			}
		}
		for _, k := range r.Agents {
			m.cfg.Bus.Publish(team.Event{Kind: team.EventWake, Agent: k})
		}
		m.notifyDown(ctx, r)
	}
}

// releaseJobs makes available again the running jobs whose last worker
// matches member (a condition on that id): what River's rescuer does for a
// stuck job, done as soon as the member is known gone.
func (m *Member) releaseJobs(ctx context.Context, member string, args ...any) (int64, error) {
	tag, err := m.pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] `+member, args...)
	return tag.RowsAffected(), err
}

// Enqueue asks for a turn of the agent: one job per agent, so a burst of
// wakes from every member folds into one.
func (m *Member) Enqueue(ctx context.Context, key store.AgentKey) (busy bool, err error) {
	res, err := m.river.Insert(ctx, turnArgs{Workflow: key.Workflow, Tag: key.Tag, Agent: key.Name}, nil)
	if err != nil {
		return false, err
	}
	return res.UniqueSkippedAsDuplicate && res.Job != nil && res.Job.State == rivertype.JobStateRunning, nil
}

// Fire asks for the scheduled wake-up due at at: every member's loop asks,
// and the queue keeps one job per agent and due time.
func (m *Member) Fire(ctx context.Context, key store.AgentKey, at time.Time) error {
	_, err := m.river.Insert(ctx, fireArgs{Workflow: key.Workflow, Tag: key.Tag, Agent: key.Name, At: at.UnixMilli()}, nil)
	return err
}

// turnArgs is a turn's job: unique per agent while it waits or runs.
type turnArgs struct {
	Workflow string `json:"workflow" river:"unique"`
	Tag      string `json:"tag" river:"unique"`
	Agent    string `json:"agent" river:"unique"`
}

func (turnArgs) Kind() string { return "agent_turn" }

func (turnArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: waitingOrRunning}}
}

// waitingOrRunning are the states in which a job stands for "a turn is
// coming": a finished one must not swallow the next.
var waitingOrRunning = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}

type turnWorker struct {
	river.WorkerDefaults[turnArgs]
	m *Member
}

func (w *turnWorker) Work(ctx context.Context, job *river.Job[turnArgs]) error {
	key := store.AgentKey{Name: job.Args.Agent, Workflow: job.Args.Workflow, Tag: job.Args.Tag}
	return w.m.work(ctx, key, time.Time{}, job.Attempt, job.MaxAttempts, completeIn(ctx, job))
}

// completeIn completes job inside the transaction that settles its run:
// the job ends exactly when the run is settled, and a member that was
// presumed dead (its job released) cannot settle a run it no longer holds.
func completeIn[T river.JobArgs](workCtx context.Context, job *river.Job[T]) store.TxHook {
	return func(_ context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](workCtx, tx, job)
		return err
	}
}

func (w *turnWorker) Timeout(*river.Job[turnArgs]) time.Duration { return -1 }

func (w *turnWorker) NextRetry(job *river.Job[turnArgs]) time.Time {
	return time.Now().Add(w.m.cfg.RetryDelay(job.Attempt))
}

// fireArgs is a scheduled wake-up's job: unique per agent and due time,
// finished ones included, so it fires once however many members ask.
type fireArgs struct {
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	Agent    string `json:"agent"`
	At       int64  `json:"at"`
}

func (fireArgs) Kind() string { return "agent_wakeup" }

func (fireArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type fireWorker struct {
	river.WorkerDefaults[fireArgs]
	m *Member
}

func (w *fireWorker) Work(ctx context.Context, job *river.Job[fireArgs]) error {
	key := store.AgentKey{Name: job.Args.Agent, Workflow: job.Args.Workflow, Tag: job.Args.Tag}
	return w.m.work(ctx, key, time.UnixMilli(job.Args.At), job.Attempt, job.MaxAttempts, completeIn(ctx, job))
}

func (w *fireWorker) Timeout(*river.Job[fireArgs]) time.Duration { return -1 }

func (w *fireWorker) NextRetry(job *river.Job[fireArgs]) time.Time {
	return time.Now().Add(w.m.cfg.RetryDelay(job.Attempt))
}

// busySnooze is how long a job waits when its agent is running on some
// member: that turn ends, and this one looks at what it left.
const busySnooze = 100 * time.Millisecond

func (m *Member) work(ctx context.Context, key store.AgentKey, fired time.Time, attempt, attempts int, complete store.TxHook) error {
	busy, err := m.cfg.Turn(ctx, key, fired, attempt, attempts, complete)
	if busy {
		return river.JobSnooze(busySnooze)
	}
	return err
}
