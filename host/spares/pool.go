package spares

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// Process is a started plugin process as a pool keeps it: the run
// supervisor's own type, which the pool only waits on and hands over.
type Process interface {
	PID() int
	// Exited reports whether the process has ended (it died waiting).
	Exited() bool
}

// Catalog is where a pool learns that a backend's binary changed
// (host/catalog.Catalog).
type Catalog interface {
	Subscribe() (changed <-chan struct{}, cancel func())
	Lookup(kind, name string) (api.Plugin, error)
}

// Config is what a pool is given by the supervisor that owns it.
type Config[P Process] struct {
	Counts  Counts
	Idle    time.Duration // a backend without a run this long loses its spares
	MaxRuns int           // the scheduler's run cap: a pool grows to it at most
	Catalog Catalog
	// Start starts a spare process of p, recorded under id (its workers
	// row), with no run's environment; Kill stops one no run took and
	// forgets its row. Both may take as long as a process start.
	Start func(p api.Plugin, id string) (P, error)
	Kill  func(id string, proc P)
	// Event hears each spare event once it is counted (the daemon's
	// metrics); nil hears nothing.
	Event func(backendName string, e api.SpareEvent)
	Log   hclog.Logger
}

// Match says whether a ready spare can serve the run that takes one.
type Match int

const (
	// Fits: the run may have it.
	Fits Match = iota
	// Unfit: not for this run; it stays for another.
	Unfit
	// TooNarrow: its sandbox base layer predates the run's directories
	// (a workflow started since); it is replaced by one that knows them.
	TooNarrow
)

// spareState is where a spare is in its life; Pool.mu guards it.
type spareState int

const (
	spareStarting  spareState = iota // its process is being started
	spareReady                       // started, handshaken, waiting for a run
	spareTaken                       // a run owns it (from the moment it was taken)
	spareDiscarded                   // to be killed: stale binary, idle backend, daemon stopping
)

// spare is one warm plugin process: started with the daemon's base
// environment in its own socket directory, handshaken, its backend
// dispensed, waiting for exactly one run, which brings the agent's env and
// project directory in its request.
type spare[P Process] struct {
	id      string // its workers row until a run claims it
	backend string
	plugin  api.Plugin    // the catalog entry it was started from
	ready   chan struct{} // closed when its start has ended; then proc or err is set
	proc    P
	err     error
	state   spareState // guarded by Pool.mu
}

// Pool keeps a supervisor's warm spares, per backend.
type Pool[P Process] struct {
	cfg Config[P]

	// mu guards the fields that follow.
	mu      sync.Mutex
	running bool // between Run's start and its end
	pools   map[string][]*spare[P]
	lastRun map[string]time.Time
	counts  map[string]*api.SpareStats
	// inflight counts each backend's runs under way; peak is the most at
	// once since peakAt, the recent demand a pool grows to (size).
	inflight map[string]int
	peak     map[string]int
	peakAt   map[string]time.Time
	// wg owns every goroutine that starts or kills a spare; Add happens
	// only under mu while running, so Run's Wait sees them all.
	wg sync.WaitGroup
}

// New returns a pool that keeps no spare until Run starts.
func New[P Process](cfg Config[P]) *Pool[P] {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Event == nil {
		cfg.Event = func(string, api.SpareEvent) {}
	}
	return &Pool[P]{cfg: cfg, pools: map[string][]*spare[P]{}, lastRun: map[string]time.Time{},
		counts: map[string]*api.SpareStats{}, inflight: map[string]int{}, peak: map[string]int{}, peakAt: map[string]time.Time{}}
}

// Demand counts a run of backend name under way until the returned func
// is called. The most runs at once in the last idle period is the size its
// pool is kept at: a team whose agents run together (a kickoff, a ring of
// mentions) finds warm processes for all of them from its second wave on,
// not one.
func (sp *Pool[P]) Demand(name string) (done func()) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.inflight[name]++
	if n := sp.inflight[name]; n >= sp.peak[name] || time.Since(sp.peakAt[name]) > sp.cfg.Idle {
		sp.peak[name], sp.peakAt[name] = n, time.Now()
	}
	return sync.OnceFunc(func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.inflight[name]--
	})
}

// Runs is how many runs of backend name are under way (Demand not yet
// ended): what a run's end must have given back.
func (sp *Pool[P]) Runs(name string) int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.inflight[name]
}

// size is how many spares backend name's pool holds: its configured count,
// grown to the backend's recent demand (at most the run cap and
// maxSpares); 0 when spares are off for it. sp.mu is held.
func (sp *Pool[P]) size(name string) int {
	n := sp.cfg.Counts.For(name)
	if n == 0 || sp.cfg.MaxRuns <= n {
		return n
	}
	if time.Since(sp.peakAt[name]) <= sp.cfg.Idle {
		n = max(n, min(sp.peak[name], sp.cfg.MaxRuns, maxSpares))
	}
	return n
}

// Stats returns the spare counters of every backend that has had a run,
// for GET /plugins.
func (sp *Pool[P]) Stats() map[string]api.SpareStats {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make(map[string]api.SpareStats, len(sp.counts))
	for name, c := range sp.counts {
		out[name] = *c
	}
	return out
}

// ColdStart counts a run of backendName that started its process cold.
func (sp *Pool[P]) ColdStart(backendName string) { sp.event(backendName, api.ColdStart) }

// event counts e for backendName and tells cfg.Event, outside the lock.
func (sp *Pool[P]) event(backendName string, e api.SpareEvent) {
	sp.mu.Lock()
	c := sp.counts[backendName]
	if c == nil {
		c = &api.SpareStats{}
		sp.counts[backendName] = c
	}
	switch e {
	case api.SpareStarted:
		c.Live++
		c.Started++
	case api.SpareTaken:
		c.Live--
		c.Used++
	case api.SpareKilled:
		c.Live--
	case api.ColdStart:
		c.ColdStarts++
	}
	sp.mu.Unlock()
	sp.cfg.Event(backendName, e)
}

// Serves reports whether runs of p may take a warm spare (the pool is
// running, p's count is not 0, p's plugin takes a run's environment in
// its request), and notes that p has a run now, which keeps its spares
// from expiring. The caller then decides, outside the pool's lock, what
// its run needs, and calls Take.
func (sp *Pool[P]) Serves(p api.Plugin) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.running || sp.cfg.Counts.For(p.Name) == 0 || !slices.Contains(p.Capabilities, plugin.CapabilityRunEnv) {
		return false
	}
	sp.lastRun[p.Name] = time.Now()
	return true
}

// Take hands a run of p a warm spare of p's exact binary that match says
// fits, with its workers row's id, or ok false when there is none (the run
// starts its process cold). The spare leaves the pool under the lock, so
// no other run can have it; one still starting is waited for, since it is
// ready sooner than a cold start would be, and checked once ready. The
// pool is brought back to its size by Refiller, not here. match is called
// under the pool's lock: it must not block.
func (sp *Pool[P]) Take(p api.Plugin, match func(P) Match) (proc P, id string, ok bool) {
	sp.mu.Lock()
	var got, misfit *spare[P]
	for _, want := range []spareState{spareReady, spareStarting} {
		for _, x := range sp.pools[p.Name] {
			if x.state != want || x.plugin.SHA256 != p.SHA256 {
				continue
			}
			if want == spareReady {
				if m := match(x.proc); m != Fits {
					if m == TooNarrow {
						misfit = x
					}
					continue
				}
			}
			got = x
			break
		}
		if got != nil {
			break
		}
	}
	if got == nil && misfit != nil {
		// Make room for a spare that knows the run's directories.
		sp.pools[p.Name] = slices.DeleteFunc(sp.pools[p.Name], func(x *spare[P]) bool { return x == misfit })
		sp.discardLocked(misfit)
	}
	if got != nil {
		got.state = spareTaken
		sp.pools[p.Name] = slices.DeleteFunc(sp.pools[p.Name], func(x *spare[P]) bool { return x == got })
	}
	sp.mu.Unlock()

	var none P
	if got == nil {
		return none, "", false
	}
	<-got.ready // bounded by the plugin start timeout
	if got.err != nil {
		return none, "", false
	}
	if got.proc.Exited() { // it died waiting: never hand a run a dead process
		sp.cfg.Log.Warn("warm spare exited before its run; starting cold", "spare", got.id, "backend", p.Name)
		sp.kill(got)
		return none, "", false
	}
	if match(got.proc) != Fits { // it was still starting when taken
		sp.kill(got)
		return none, "", false
	}
	sp.event(p.Name, api.SpareTaken)
	return got.proc, got.id, true
}

// Refiller returns a func that brings p's pool back to its size, once. A
// run calls it when it is under way (its first event, or its end), not when
// it takes its process: starting a process costs a core for tens of
// milliseconds, and on a small machine that would be taken from the run
// that just started.
func (sp *Pool[P]) Refiller(p api.Plugin) func() {
	return sync.OnceFunc(func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if sp.running {
			sp.refillLocked(p)
		}
	})
}

// refillLocked brings p's pool to its size, dropping spares of another
// binary (the file changed). sp.mu is held.
func (sp *Pool[P]) refillLocked(p api.Plugin) {
	keep := sp.pools[p.Name][:0]
	for _, x := range sp.pools[p.Name] {
		if x.plugin.SHA256 == p.SHA256 && x.plugin.Path == p.Path {
			keep = append(keep, x)
			continue
		}
		sp.discardLocked(x)
	}
	for len(keep) < sp.size(p.Name) {
		x := &spare[P]{id: newSpareID(), backend: p.Name, plugin: p, ready: make(chan struct{})}
		keep = append(keep, x)
		sp.wg.Go(func() { sp.start(x) })
	}
	sp.pools[p.Name] = keep
}

// discardLocked marks x to be killed: now if it is ready, by its starter
// when its start ends otherwise. sp.mu is held and x has left its pool.
func (sp *Pool[P]) discardLocked(x *spare[P]) {
	was := x.state
	x.state = spareDiscarded
	if was == spareReady {
		sp.wg.Go(func() { sp.kill(x) })
	}
}

// start starts x's process. If x was discarded meanwhile it is killed at
// once; if a run took it, the run gets it when ready closes.
func (sp *Pool[P]) start(x *spare[P]) {
	log := sp.cfg.Log.With("spare", x.id, "backend", x.backend)
	proc, err := sp.cfg.Start(x.plugin, x.id)
	if err != nil {
		log.Warn("start warm spare; runs of this backend start cold meanwhile", "error", err)
		x.err = err
		sp.mu.Lock()
		sp.pools[x.backend] = slices.DeleteFunc(sp.pools[x.backend], func(y *spare[P]) bool { return y == x })
		sp.mu.Unlock()
		close(x.ready)
		return
	}
	x.proc = proc
	sp.event(x.backend, api.SpareStarted)
	sp.mu.Lock()
	discarded := x.state == spareDiscarded
	if x.state == spareStarting {
		x.state = spareReady
	}
	sp.mu.Unlock()
	close(x.ready)
	if discarded {
		sp.kill(x)
		return
	}
	log.Debug("warm spare ready", "pid", proc.PID())
}

// kill stops a spare that no run took, and forgets its row.
func (sp *Pool[P]) kill(x *spare[P]) {
	sp.cfg.Kill(x.id, x.proc)
	sp.event(x.backend, api.SpareKilled)
}

// Run keeps the warm spares until ctx ends: it replaces those whose
// binary changed (the catalog saw a new file), stops those of a backend
// without a run for the idle time, and at the end kills them all and
// waits for every spare being started or stopped.
func (sp *Pool[P]) Run(ctx context.Context) {
	sp.mu.Lock()
	sp.running = true
	sp.mu.Unlock()
	changed, unsubscribe := sp.cfg.Catalog.Subscribe()
	defer unsubscribe()
	tick := time.NewTicker(max(sp.cfg.Idle/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sp.stop()
			return
		case <-changed:
			sp.review()
		case <-tick.C:
			sp.expire(time.Now())
		}
	}
}

// review replaces spares whose binary is no longer the catalog's: the old
// ones are killed, new ones start from the new binary. A backend whose
// plugin is gone or broken loses its spares.
func (sp *Pool[P]) review() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.running {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(sp.pools)) {
		p, err := sp.cfg.Catalog.Lookup(plugin.KindBackend, name)
		if err != nil {
			for _, x := range sp.pools[name] {
				sp.discardLocked(x)
			}
			delete(sp.pools, name)
			continue
		}
		sp.refillLocked(p)
	}
}

// expire stops the spares of backends without a run for the idle time;
// their next run starts cold and brings the pool back.
func (sp *Pool[P]) expire(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for name, xs := range sp.pools {
		if now.Sub(sp.lastRun[name]) < sp.cfg.Idle {
			continue
		}
		sp.cfg.Log.Info("stopping warm spares of an idle backend", "backend", name, "spares", len(xs), "idle", sp.cfg.Idle)
		for _, x := range xs {
			sp.discardLocked(x)
		}
		delete(sp.pools, name)
	}
}

// stop ends the pool: every spare is killed, and it returns when every
// goroutine that starts or kills one has ended.
func (sp *Pool[P]) stop() {
	sp.mu.Lock()
	sp.running = false
	var ready []*spare[P]
	for name, xs := range sp.pools {
		for _, x := range xs {
			if x.state == spareReady {
				ready = append(ready, x)
			}
			x.state = spareDiscarded
		}
		delete(sp.pools, name)
	}
	sp.mu.Unlock()
	for _, x := range ready {
		sp.kill(x)
	}
	sp.wg.Wait()
}

// newSpareID names a spare's workers row: "spare_" and 16 hex digits.
func newSpareID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "spare_" + hex.EncodeToString(b)
}
