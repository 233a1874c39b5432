package pgtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/pgserver"
)

// Superuser is the role initdb creates. Every DSN connects as it without a
// password: the cluster trusts every connection, and it listens on
// 127.0.0.1 only.
const Superuser = pgserver.Superuser

// EnvRequire, set to 1, turns the skip for a machine without PostgreSQL into
// a failure, so that CI cannot pass by skipping every PostgreSQL test.
const EnvRequire = "AGENT_WORKER_E2E_POSTGRES"

// Cluster is one running PostgreSQL server (internal/pgserver) whose data
// lives in a private temporary directory and dies with it; NewDatabase
// gives a test a database of its own.
type Cluster struct {
	*pgserver.Cluster
	n atomic.Int64 // databases made so far, for unique names
}

// Start starts a cluster of the test's own, stopped when tb ends. Prefer
// Shared, which starts one per test binary: a start costs about a second.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := pgserver.Launch()
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return &Cluster{Cluster: c}
}

// shared is the cluster of Shared, started by the first test that asks.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Shared returns the test binary's cluster, starting it on first use. Tests
// must not stop it; Main does, after the last test. Without Main it still
// goes away when the binary exits, by its watchdog.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	shared.once.Do(func() {
		c, err := pgserver.Launch()
		if err == nil {
			shared.c = &Cluster{Cluster: c}
		}
		shared.err = err
	})
	if shared.err != nil {
		fail(tb, shared.err)
	}
	return shared.c
}

// Main runs the tests, then stops the shared cluster, if one was started,
// with pg_ctl stop -m immediate (nothing is checkpointed: the data is thrown
// away), removes its directory, and exits. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	shared.once.Do(func() {}) // orders us after any start, and forbids a later one
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// fail skips or fails tb for err, as the package documentation says.
func fail(tb testing.TB, err error) {
	tb.Helper()
	if pgserver.IsUnavailable(err) && os.Getenv(EnvRequire) != "1" {
		tb.Skipf("pgtest: %v", err)
		return // only for fakes: Skipf does not return
	}
	tb.Fatalf("pgtest: %v", err)
}

// NewDatabase creates an empty database for tb alone and returns its DSN.
// tb's cleanup drops it, closing any connection still open.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := databaseName(c.n.Add(1), tb.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

// databaseName is unique within a cluster (n) and names the test, cut to
// PostgreSQL's 63-byte limit so that the server does not cut it instead.
func databaseName(n int64, test string) string {
	name := []byte("t" + strconv.FormatInt(n, 10) + "_" + strings.ToLower(test))
	for i, b := range name {
		if (b < 'a' || b > 'z') && (b < '0' || b > '9') {
			name[i] = '_'
		}
	}
	return string(name[:min(len(name), 63)])
}
