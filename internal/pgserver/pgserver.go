package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the role initdb creates. Every DSN connects as it without a
// password: the cluster trusts every connection, and it listens on
// 127.0.0.1 only.
const Superuser = "agentworker"

// Unavailable is why this machine cannot run a cluster at all: a reason to
// skip, unlike a cluster that was tried and failed to start.
type Unavailable string

func (u Unavailable) Error() string { return string(u) }

const (
	noBinaries = "PostgreSQL binaries (initdb, pg_ctl) not found: install Debian's postgresql, or run make test-e2e"
	noUser     = "running as root, which initdb refuses, and there is no postgres user to run PostgreSQL as: install Debian's postgresql (it creates the user), or run make test-e2e"
)

// Cluster is one running PostgreSQL server whose data lives in a private
// temporary directory and dies with it.
type Cluster struct {
	dir  string              // holds data/, sock/ and server.log
	bin  string              // directory of initdb, pg_ctl and postgres
	cred *syscall.Credential // the postgres user's when the tests run as root; nil runs them as ourselves
	port int                 // 0 until the server is up

	// The watchdog is a shell, in its own session, waiting for EOF on its
	// stdin. We hold the only write end: when this process exits, however it
	// dies, the watchdog stops the server and removes dir.
	watchdog     *exec.Cmd
	watchdogPipe *os.File

	stopOnce sync.Once
	stopErr  error
}

// Launch starts a cluster. The caller stops it with Stop, or leaves that
// to the watchdog when it exits. Test IsUnavailable on the error to tell a
// machine without PostgreSQL from a server that failed to start.
func Launch() (*Cluster, error) {
	return start()
}

// IsUnavailable reports whether err says that this machine cannot run a
// cluster at all (no server binaries, or no user to run them as), which
// a caller may take as a reason to skip rather than to fail.
func IsUnavailable(err error) bool {
	_, ok := errors.AsType[Unavailable](err)
	return ok
}

// DSN is the pgx connection string of database name in c.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.port, url.PathEscape(name))
}

// CreateDatabase creates an empty database named name, which Stop throws
// away with the rest of the cluster, and returns its DSN.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// DropDatabase drops database name, closing any connection still open.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	if err := c.admin(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// Dir is the cluster's private directory (data/, sock/ and server.log),
// removed by Stop.
func (c *Cluster) Dir() string { return c.dir }

// admin runs one statement in the maintenance database.
func (c *Cluster) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop shuts the server down with pg_ctl stop -m immediate and removes its
// directory. Later calls return the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		out, err := c.run("pg_ctl", "-D", c.dataDir(), "-m", "immediate", "-s", "stop")
		if err != nil && c.port != 0 { // a server that never came up has nothing to stop
			errs = append(errs, fmt.Errorf("stop PostgreSQL: %w: %s", err, bytes.TrimSpace(out)))
		}
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove cluster: %w", err))
		}
		if c.watchdog != nil { // it finds nothing left to do, and exits
			c.watchdogPipe.Close()
			_ = c.watchdog.Wait()
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Pause shuts the server down as an outage would (pg_ctl stop -m fast:
// connections are cut, the data stays); Resume starts it again on the same
// port. A test uses them to take the store away under a running daemon.
func (c *Cluster) Pause() error {
	out, err := c.run("pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "-s", "stop")
	if err != nil {
		return fmt.Errorf("pause PostgreSQL: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Resume starts a paused server again on its port, waiting until it
// accepts connections.
func (c *Cluster) Resume() error {
	logged := logSize(c.logFile())
	out, err := c.run("pg_ctl", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60", "-s",
		"-o", c.serverOptions(c.port), "start")
	if err != nil {
		return fmt.Errorf("resume PostgreSQL: %w: %s\nserver log:\n%s", err, bytes.TrimSpace(out), tail(readFrom(c.logFile(), logged)))
	}
	return nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) sockDir() string { return filepath.Join(c.dir, "sock") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "server.log") }

// start makes a cluster: initdb, the watchdog, then the server on a free
// port, trying other ports if another process takes ours first.
func start() (_ *Cluster, err error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin, cred: cred}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if out, err := c.run("initdb", "-D", c.dataDir(), "-A", "trust", "-U", Superuser,
		"--no-sync", "-E", "UTF8", "--locale=C", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("initdb: %w:\n%s", err, tail(out))
	}
	if err := c.startWatchdog(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		logged := logSize(c.logFile())
		out, err := c.run("pg_ctl", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60", "-s",
			"-o", c.serverOptions(port), "start")
		if err == nil {
			c.port = port
			return c, nil
		}
		log := readFrom(c.logFile(), logged)
		if attempt < 5 && bytes.Contains(log, []byte("Address already in use")) {
			continue
		}
		return nil, fmt.Errorf("pg_ctl start: %w: %s\nserver log:\n%s",
			err, bytes.TrimSpace(out), tail(log))
	}
}

// serverOptions is pg_ctl's -o, which a shell reads: the socket directory is
// quoted. Durability is off because the data is thrown away.
func (c *Cluster) serverOptions(port int) string {
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"+
		" -c full_page_writes=off -c max_connections=200", port, shellQuote(c.sockDir()))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startWatchdog starts the process that stops the server if this one dies
// without calling Stop (a killed or timed-out test binary, or a package
// without Main). Its own session keeps it alive through the terminal's ^C.
func (c *Cluster) startWatchdog() error {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	const script = `read -r _; "$0" -D "$1" -m immediate -s stop >/dev/null 2>&1; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, filepath.Join(c.bin, "pg_ctl"), c.dataDir(), c.dir)
	cmd.Stdin = r
	cmd.Dir = c.dir
	cmd.Env = c.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("watchdog: %w", err)
	}
	c.watchdog, c.watchdogPipe = cmd, w
	return nil
}

// run runs one of the server's programs as the server's user, with only
// the environment it needs (no PG* variables of ours to redirect it).
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = c.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

// env pins the time zone initdb writes to postgresql.conf.
func (c *Cluster) env() []string {
	return []string{"PATH=" + c.bin + ":/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
}

// findBin returns the first directory with the server's programs: the one
// of initdb on PATH (after symlinks, which may name only some of them),
// else Debian's /usr/lib/postgresql/VERSION/bin, newest version first.
func findBin() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	for _, d := range append(dirs, debian...) {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "pg_ctl")) &&
			executable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", Unavailable(noBinaries)
}

// compareVersions orders dotted versions by number, so that 9.6 < 10 < 15.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// serverUser is the user to run the server as: ourselves, unless we are
// root, which initdb and postgres refuse; then Debian's postgres user.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, Unavailable(noUser)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user: gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// makeDir makes the cluster's directory, owned by the server's user. For
// another user every parent must be searchable, so a private TMPDIR is
// passed over for /tmp.
func makeDir(cred *syscall.Credential) (string, error) {
	base := os.TempDir()
	if cred != nil && !searchable(base) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	sock := filepath.Join(dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	if cred != nil {
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				os.RemoveAll(dir)
				return "", fmt.Errorf("cluster directory: %w", err)
			}
		}
	}
	return dir, nil
}

// searchable reports whether every directory from dir up to / lets other
// users through.
func searchable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns what the server logged after offset.
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return []byte(err.Error())
	}
	defer f.Close()
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, 1<<30))
	return b
}

// tail keeps the last lines of a log, the ones that say why.
func tail(b []byte) []byte {
	const lines = 30
	b = bytes.TrimRight(b, "\n")
	for i, n := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			if n++; n == lines {
				return b[i+1:]
			}
		}
	}
	return b
}
