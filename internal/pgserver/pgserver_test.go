package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		a, b string
		less bool
	}{
		"by number, not text": {"9.6", "10", true},
		"newer major":         {"16", "15", false},
		"minor":               {"9.5", "9.6", true},
	} {
		if got := compareVersions(tc.a, tc.b) < 0; got != tc.less {
			t.Errorf("%s: %s < %s = %v, want %v", name, tc.a, tc.b, got, tc.less)
		}
	}
}

// A program tells a machine without PostgreSQL from a server that failed,
// through its own wrapping.
func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"no binaries":      {fmt.Errorf("cluster: %w", Unavailable(noBinaries)), true},
		"no postgres user": {fmt.Errorf("cluster: %w", Unavailable(noUser)), true},
		"start failed":     {errors.New("cluster: pg_ctl start: exit status 1"), false},
		"nil":              {nil, false},
	} {
		if got := IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

// A launched cluster serves the databases it creates, drops them, and Stop
// ends the server and removes its directory.
func TestLaunch(t *testing.T) {
	c, err := Launch()
	if IsUnavailable(err) && os.Getenv("AGENT_WORKER_E2E_POSTGRES") != "1" {
		t.Skipf("no PostgreSQL here (AGENT_WORKER_E2E_POSTGRES=1 makes this a failure): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dsn, err := c.CreateDatabase(ctx, "bench_one")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&name)
	conn.Close(ctx)
	if err != nil || name != "bench_one" {
		t.Errorf("connected to %q (%v), want bench_one", name, err)
	}
	if _, err := c.CreateDatabase(ctx, "bench_one"); err == nil {
		t.Error("a second database of the same name was created")
	}
	if err := c.DropDatabase(ctx, "bench_one"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDatabase(ctx, "bench_one"); err != nil {
		t.Errorf("create after drop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cluster directory after Stop: %v, want it gone", err)
	}
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		conn.Close(ctx)
		t.Error("the server still answers after Stop")
	}
}
