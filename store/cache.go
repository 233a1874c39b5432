package store

import (
	"context"
	"maps"
	"sync"
)

// genCache is an in-memory copy of rows of the database that may only lag
// in one direction: a value is kept only when nothing it depends on was
// written between the read that found it and the put (gen), and every
// write that changes such rows calls forget after it commits, so a caller
// whose write has returned never reads the old value again. Only the
// process that owns the writer may keep one: in a cluster another member
// writes too, and this one would not hear of it (callers check Cluster).
type genCache[K comparable, V any] struct {
	// mu guards the fields that follow.
	mu  sync.Mutex
	gen uint64
	m   map[K]V
}

// maxCached bounds a genCache; past it the cache starts over.
const maxCached = 4096

// get returns the cached value of k, or the generation a caller must quote
// when it caches what it reads instead.
func (c *genCache[K, V]) get(k K) (V, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, c.gen, ok
}

// put caches v for k unless something was forgotten since generation gen.
func (c *genCache[K, V]) put(k K, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}

// forget drops every cached value: some may be stale.
func (c *genCache[K, V]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// forgetIf drops the cached values for which stale is true; like forget,
// it keeps a read that raced it from caching what it read.
func (c *genCache[K, V]) forgetIf(stale func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	maps.DeleteFunc(c.m, func(_ K, v V) bool { return stale(v) })
}

// Members is what composing a message needs of its team: the names of
// its agents, sorted, and the workflow's long-message setting. Names is
// shared between callers and must not be modified.
type Members struct {
	Names []string
	// LongMessageChars is Workflow.LongMessageChars.
	LongMessageChars int
}

// Members returns the team of scope, NotFound when its workflow does not
// exist. The channel's write path asks on every message, so the answer is
// kept in memory until a write changes a team (configChanged); in a
// cluster, only while this member hears the others' changes
// (HearConfigChanges), else it is read every time.
func (db *DB) Members(ctx context.Context, scope Scope) (Members, error) {
	m, gen, ok := db.teams.get(scope)
	if ok && db.configKept() {
		return m, nil
	}
	w, names, err := db.Team(ctx, scope)
	if err != nil {
		return Members{}, err
	}
	m = Members{Names: names, LongMessageChars: w.LongMessageChars}
	if db.configKept() {
		db.teams.put(scope, m, gen)
	}
	return m, nil
}

// ConfigGeneration counts the committed writes that add, remove or
// redefine agents or workflows (backend, schedule, config). A caller may
// keep what it read of an agent's definition while the count is the same;
// ok is false in a cluster while this member does not hear the others'
// changes (HearConfigChanges).
func (db *DB) ConfigGeneration() (gen uint64, ok bool) {
	return db.configGen.Load(), db.configKept()
}

// configChanged is called after every write that adds, removes or
// redefines agents or workflows has committed (or failed): cached teams
// are dropped and ConfigGeneration moves.
func (db *DB) configChanged() {
	db.teams.forget()
	db.configGen.Add(1)
}
