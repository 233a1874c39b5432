package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

// DefaultSpareIdle is how long a backend may go without a run before its
// warm spares are stopped.
const DefaultSpareIdle = 5 * time.Minute

// DefaultSpares keeps one warm spare for every backend in use.
var DefaultSpares = Spares{Default: 1}

// Spares is how many warm spare processes the supervisor keeps ready for
// each backend in use: Default, or the backend's own count. 0 disables
// them (every run starts its process cold).
type Spares struct {
	Default  int
	Backends map[string]int
}

// For is the pool size of one backend.
func (s Spares) For(backendName string) int {
	if n, ok := s.Backends[backendName]; ok {
		return n
	}
	return s.Default
}

// maxSpares bounds a pool: each spare is a live process.
const maxSpares = 16

// ParseSpares reads the --spares setting: a count for every backend ("1"),
// counts per backend ("sdk=0,mock=2"), or both ("2,sdk=0").
func ParseSpares(text string) (Spares, error) {
	s := Spares{Default: DefaultSpares.Default}
	for part := range strings.SplitSeq(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, count, per := strings.Cut(part, "=")
		if !per {
			name, count = "", part
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 0 || n > maxSpares {
			return Spares{}, api.Errorf(api.CodeInvalid, "--spares %q: %q is not a count from 0 to %d: write N, or backend=N, comma-separated (e.g. 1,sdk=0)", text, strings.TrimSpace(count), maxSpares)
		}
		if !per {
			s.Default = n
			continue
		}
		name = strings.TrimSpace(name)
		if err := api.ValidateScopeName("backend", name); err != nil {
			return Spares{}, api.Errorf(api.CodeInvalid, "--spares %q: %w", text, err)
		}
		if s.Backends == nil {
			s.Backends = map[string]int{}
		}
		s.Backends[name] = n
	}
	return s, nil
}

// String is the setting as ParseSpares reads it.
func (s Spares) String() string {
	parts := []string{strconv.Itoa(s.Default)}
	for _, name := range slices.Sorted(maps.Keys(s.Backends)) {
		parts = append(parts, name+"="+strconv.Itoa(s.Backends[name]))
	}
	return strings.Join(parts, ",")
}

// spareState is where a spare is in its life; pool.mu guards it.
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
type spare struct {
	id      string // its workers row until a run claims it
	backend string
	plugin  api.Plugin    // the catalog entry it was started from
	ready   chan struct{} // closed when its start has ended; then proc or err is set
	proc    *process
	err     error
	state   spareState // guarded by sparePool.mu
}

// sparePool keeps the supervisor's warm spares, per backend.
type sparePool struct {
	cfg     Spares
	idle    time.Duration
	maxRuns int // SupervisorConfig.MaxRuns

	// mu guards the fields that follow.
	mu      sync.Mutex
	running bool // between RunSpares's start and its end
	pools   map[string][]*spare
	lastRun map[string]time.Time
	counts  map[string]*api.SpareStats
	// inflight counts each backend's runs under way; peak is the most at
	// once since peakAt, the recent demand a pool grows to (size).
	inflight map[string]int
	peak     map[string]int
	peakAt   map[string]time.Time
	// wg owns every goroutine that starts or kills a spare; Add happens
	// only under mu while running, so RunSpares's Wait sees them all.
	wg sync.WaitGroup
}

func newSparePool(cfg Spares, idle time.Duration, maxRuns int) *sparePool {
	return &sparePool{cfg: cfg, idle: idle, maxRuns: maxRuns, pools: map[string][]*spare{}, lastRun: map[string]time.Time{},
		counts: map[string]*api.SpareStats{}, inflight: map[string]int{}, peak: map[string]int{}, peakAt: map[string]time.Time{}}
}

// demand counts a run of backend name under way until the returned func
// is called. The most runs at once in the last idle period is the size its
// pool is kept at: a team whose agents run together (a kickoff, a ring of
// mentions) finds warm processes for all of them from its second wave on,
// not one.
func (sp *sparePool) demand(name string) (done func()) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.inflight[name]++
	if n := sp.inflight[name]; n >= sp.peak[name] || time.Since(sp.peakAt[name]) > sp.idle {
		sp.peak[name], sp.peakAt[name] = n, time.Now()
	}
	return sync.OnceFunc(func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.inflight[name]--
	})
}

// size is how many spares backend name's pool holds: its configured count,
// grown to the backend's recent demand (at most the run cap and
// maxSpares); 0 when spares are off for it. sp.mu is held.
func (sp *sparePool) size(name string) int {
	n := sp.cfg.For(name)
	if n == 0 || sp.maxRuns <= n {
		return n
	}
	if time.Since(sp.peakAt[name]) <= sp.idle {
		n = max(n, min(sp.peak[name], sp.maxRuns, maxSpares))
	}
	return n
}

// SpareStats returns the spare counters of every backend that has had a
// run, for GET /plugins.
func (s *Supervisor) SpareStats() map[string]api.SpareStats {
	sp := s.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make(map[string]api.SpareStats, len(sp.counts))
	for name, c := range sp.counts {
		out[name] = *c
	}
	return out
}

// spareEvent counts e for backendName and tells the Observer, outside the lock.
func (s *Supervisor) spareEvent(backendName string, e api.SpareEvent) {
	sp := s.spares
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
	s.cfg.Observer.SpareEvent(backendName, e)
}

// takeSpare hands a run of p a warm spare of p's exact binary, or nil when
// there is none (the run starts its process cold). The spare leaves the
// pool under the lock, so no other run can have it; one still starting is
// waited for, since it is ready sooner than a cold start would be. The
// pool is brought back to its size by refiller, not here.
func (s *Supervisor) takeSpare(p api.Plugin, c confinement) *spare {
	sp := s.spares
	sp.mu.Lock()
	if !sp.running || sp.cfg.For(p.Name) == 0 || !slices.Contains(p.Capabilities, plugin.CapabilityRunEnv) {
		sp.mu.Unlock()
		return nil
	}
	sp.lastRun[p.Name] = time.Now()
	sp.mu.Unlock()
	n := needOf(c) // outside the lock: it reads the file system
	sp.mu.Lock()
	var got, misfit *spare
	for _, want := range []spareState{spareReady, spareStarting} {
		for _, x := range sp.pools[p.Name] {
			if x.state != want || x.plugin.SHA256 != p.SHA256 {
				continue
			}
			if want == spareReady && !n.fits(x, p) {
				if x.proc.confined && n.confined {
					misfit = x // its base layer is too narrow for this run
				}
				continue
			}
			got = x
			break
		}
		if got != nil {
			break
		}
	}
	if got == nil && misfit != nil {
		// Its base layer predates the run's directories (a workflow
		// started since): make room for a spare that knows them.
		sp.pools[p.Name] = slices.DeleteFunc(sp.pools[p.Name], func(x *spare) bool { return x == misfit })
		s.discardLocked(misfit)
	}
	if got != nil {
		got.state = spareTaken
		sp.pools[p.Name] = slices.DeleteFunc(sp.pools[p.Name], func(x *spare) bool { return x == got })
	}
	sp.mu.Unlock()

	if got == nil {
		return nil
	}
	<-got.ready // bounded by the plugin start timeout
	if got.err != nil {
		return nil
	}
	if got.proc.client.Exited() { // it died waiting: never hand a run a dead process
		s.log.Warn("warm spare exited before its run; starting cold", "spare", got.id, "backend", p.Name)
		s.killSpare(got)
		return nil
	}
	if !n.fits(got, p) { // it was still starting when taken
		s.killSpare(got)
		return nil
	}
	s.spareEvent(p.Name, api.SpareTaken)
	return got
}

// refiller returns a func that brings p's pool back to its size, once. A
// run calls it when it is under way (its first event, or its end), not when
// it takes its process: starting a process costs a core for tens of
// milliseconds, and on a small machine that would be taken from the run
// that just started.
func (s *Supervisor) refiller(p api.Plugin) func() {
	return sync.OnceFunc(func() {
		sp := s.spares
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if sp.running {
			s.refillLocked(p)
		}
	})
}

// refillLocked brings p's pool to its size, dropping spares of another
// binary (the file changed). sp.mu is held.
func (s *Supervisor) refillLocked(p api.Plugin) {
	sp := s.spares
	keep := sp.pools[p.Name][:0]
	for _, x := range sp.pools[p.Name] {
		if x.plugin.SHA256 == p.SHA256 && x.plugin.Path == p.Path {
			keep = append(keep, x)
			continue
		}
		s.discardLocked(x)
	}
	for len(keep) < sp.size(p.Name) {
		x := &spare{id: newSpareID(), backend: p.Name, plugin: p, ready: make(chan struct{})}
		keep = append(keep, x)
		sp.wg.Go(func() { s.startSpare(x) })
	}
	sp.pools[p.Name] = keep
}

// discardLocked marks x to be killed: now if it is ready, by its starter
// when its start ends otherwise. sp.mu is held and x has left its pool.
func (s *Supervisor) discardLocked(x *spare) {
	was := x.state
	x.state = spareDiscarded
	if was == spareReady {
		s.spares.wg.Go(func() { s.killSpare(x) })
	}
}

// startSpare starts x's process and records its workers row. If x was
// discarded meanwhile it is killed at once; if a run took it, the run
// gets it when ready closes.
func (s *Supervisor) startSpare(x *spare) {
	log := s.log.With("spare", x.id, "backend", x.backend)
	proc, err := s.startProcess(x.plugin, "spare", "", nil, s.spareConfinement(context.Background(), x.plugin), log)
	if err == nil {
		err = s.db.AddWorker(context.Background(), store.Worker{RunID: x.id, State: store.WorkerSpare, PID: proc.pid, PGID: proc.pid,
			PluginPath: proc.path, PluginSHA256: x.plugin.SHA256})
		if err != nil {
			proc.stop()
		}
	}
	if err != nil {
		log.Warn("start warm spare; runs of this backend start cold meanwhile", "error", err)
		x.err = err
		sp := s.spares
		sp.mu.Lock()
		sp.pools[x.backend] = slices.DeleteFunc(sp.pools[x.backend], func(y *spare) bool { return y == x })
		sp.mu.Unlock()
		close(x.ready)
		return
	}
	x.proc = proc
	s.spareEvent(x.backend, api.SpareStarted)
	sp := s.spares
	sp.mu.Lock()
	discarded := x.state == spareDiscarded
	if x.state == spareStarting {
		x.state = spareReady
	}
	sp.mu.Unlock()
	close(x.ready)
	if discarded {
		s.killSpare(x)
		return
	}
	log.Debug("warm spare ready", "pid", proc.pid)
}

// killSpare stops a spare that no run took, and forgets its row.
func (s *Supervisor) killSpare(x *spare) {
	x.proc.stop()
	if err := s.db.RemoveWorker(context.Background(), x.id); err != nil {
		s.log.Warn("forget warm spare", "spare", x.id, "error", err)
	}
	s.spareEvent(x.backend, api.SpareKilled)
}

// RunSpares keeps the warm spares until ctx ends: it replaces those whose
// binary changed (the catalog saw a new file), stops those of a backend
// without a run for the idle time, and at the end kills them all and
// waits for every spare being started or stopped.
func (s *Supervisor) RunSpares(ctx context.Context) {
	sp := s.spares
	sp.mu.Lock()
	sp.running = true
	sp.mu.Unlock()
	changed, unsubscribe := s.catalog.Subscribe()
	defer unsubscribe()
	tick := time.NewTicker(max(sp.idle/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stopSpares()
			return
		case <-changed:
			s.reviewSpares()
		case <-tick.C:
			s.expireSpares(time.Now())
		}
	}
}

// reviewSpares replaces spares whose binary is no longer the catalog's:
// the old ones are killed, new ones start from the new binary. A backend
// whose plugin is gone or broken loses its spares.
func (s *Supervisor) reviewSpares() {
	sp := s.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.running {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(sp.pools)) {
		p, err := s.catalog.Lookup(plugin.KindBackend, name)
		if err != nil {
			for _, x := range sp.pools[name] {
				s.discardLocked(x)
			}
			delete(sp.pools, name)
			continue
		}
		s.refillLocked(p)
	}
}

// expireSpares stops the spares of backends without a run for the idle
// time; their next run starts cold and brings the pool back.
func (s *Supervisor) expireSpares(now time.Time) {
	sp := s.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for name, xs := range sp.pools {
		if now.Sub(sp.lastRun[name]) < sp.idle {
			continue
		}
		s.log.Info("stopping warm spares of an idle backend", "backend", name, "spares", len(xs), "idle", sp.idle)
		for _, x := range xs {
			s.discardLocked(x)
		}
		delete(sp.pools, name)
	}
}

// stopSpares ends the pool: every spare is killed, and it returns when
// every goroutine that starts or kills one has ended.
func (s *Supervisor) stopSpares() {
	sp := s.spares
	sp.mu.Lock()
	sp.running = false
	var ready []*spare
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
		s.killSpare(x)
	}
	sp.wg.Wait()
}

// newSpareID names a spare's workers row: "spare_" and 16 hex digits.
func newSpareID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "spare_" + hex.EncodeToString(b)
}
