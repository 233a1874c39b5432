package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// BackupInfo is what Backup wrote.
type BackupInfo struct {
	// Path is the backup file, Bytes its size.
	Path  string
	Bytes int64
	// Took is how long the copy and its check took.
	Took time.Duration
}

// Backup writes a consistent copy of the SQLite database to dst (an
// absolute path) while the daemon keeps working: VACUUM INTO reads one
// snapshot, so writes go on meanwhile and none is half in the copy. The
// copy is written beside dst under a temporary name, switched out of WAL
// mode (a backup is one self-contained file), passes quick_check and is
// synced before it takes dst's name, so dst is either a sound copy or
// absent. An existing dst is replaced only with force. On PostgreSQL it
// refuses with the pg_dump command that does the job there.
func (db *DB) Backup(ctx context.Context, dst string, force bool) (BackupInfo, error) {
	e, ok := db.eng.(*sqliteEngine)
	if !ok {
		return BackupInfo{}, contract.Errorf(contract.CodeInvalid, "backup copies the SQLite file of a daemon, and this one keeps its state in PostgreSQL (%s): "+
			"back that up with PostgreSQL's tools, e.g. pg_dump %q > FILE (the password from PGPASSWORD or ~/.pgpass), restored with psql into an empty database", db.path, withoutPassword(db.path))
	}
	start := time.Now()
	if err := e.checkBackupPath(dst, force); err != nil {
		return BackupInfo{}, err
	}
	dir, base := filepath.Split(dst)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*") // mode 0600: it holds every message
	if err != nil {
		return BackupInfo{}, contract.Errorf(contract.CodeInvalid, "backup to %s: %w", dst, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	published := false
	defer func() {
		if !published {
			os.Remove(tmpPath)
		}
	}()

	conn, err := e.pool.Take(ctx)
	if err != nil {
		return BackupInfo{}, db.coded(err)
	}
	err = sqlitex.ExecuteTransient(conn, "VACUUM INTO ?", &sqlitex.ExecOptions{Args: []any{tmpPath}})
	e.pool.Put(conn)
	if err != nil {
		if sqlite.ErrCode(err).ToPrimary() == sqlite.ResultFull || sqlite.ErrCode(err).ToPrimary() == sqlite.ResultIOErr {
			return BackupInfo{}, contract.Errorf(contract.CodeUnavailable, "backup to %s: %w: free space where the backup goes, or pick another place", dst, err)
		}
		return BackupInfo{}, db.coded(fmt.Errorf("backup to %s: %w", dst, err))
	}
	if err := sealBackup(tmpPath); err != nil {
		return BackupInfo{}, fmt.Errorf("backup to %s: %w", dst, err)
	}
	if err := publish(tmpPath, dst, force); err != nil {
		return BackupInfo{}, err
	}
	published = true
	fi, err := os.Stat(dst)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup to %s: %w", dst, err)
	}
	return BackupInfo{Path: dst, Bytes: fi.Size(), Took: time.Since(start)}, nil
}

// checkBackupPath refuses a destination Backup cannot or must not write:
// a relative path (whose directory would be the daemon's, not the
// caller's), a missing directory, the database's own files, and an
// existing file unless force.
func (e *sqliteEngine) checkBackupPath(dst string, force bool) error {
	if !filepath.IsAbs(dst) {
		return contract.Errorf(contract.CodeInvalid, "backup path %q is relative: give an absolute path (the CLI resolves one against its directory)", dst)
	}
	if fi, err := os.Stat(filepath.Dir(dst)); err != nil || !fi.IsDir() {
		return contract.Errorf(contract.CodeInvalid, "cannot back up to %s: directory %s does not exist", dst, filepath.Dir(dst))
	}
	// The database's -wal or -shm name would make the backup part of the
	// live database; compare with the directory's symlinks resolved.
	real := dst
	if d, err := filepath.EvalSymlinks(filepath.Dir(dst)); err == nil {
		real = filepath.Join(d, filepath.Base(dst))
	}
	live := e.path
	if d, err := filepath.EvalSymlinks(filepath.Dir(e.path)); err == nil {
		live = filepath.Join(d, filepath.Base(e.path))
	}
	for _, f := range []string{live, live + "-wal", live + "-shm", live + "-journal"} {
		if real == f {
			return contract.Errorf(contract.CodeInvalid, "cannot back up to %s: that is the daemon's own database file: pick another name", dst)
		}
	}
	fi, err := os.Stat(dst)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return contract.Errorf(contract.CodeInvalid, "cannot back up to %s: %w", dst, err)
	case fi.IsDir():
		return contract.Errorf(contract.CodeInvalid, "cannot back up to %s: it is a directory: give a file name", dst)
	case os.SameFile(fi, e.opened):
		return contract.Errorf(contract.CodeInvalid, "cannot back up to %s: that is the daemon's own database file: pick another name", dst)
	case !force:
		return contract.Errorf(contract.CodeConflict, "%s already exists: pick another name, or add --force to replace it", dst)
	}
	return nil
}

// sealBackup makes the copy at path a self-contained file (no WAL), checks
// it with quick_check and syncs it to disk.
func sealBackup(path string) error {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenURI)
	if err != nil {
		return err
	}
	var rows []string
	err = sqlitex.ExecuteTransient(conn, "PRAGMA journal_mode = DELETE", nil)
	if err == nil {
		err = sqlitex.ExecuteTransient(conn, "PRAGMA quick_check", &sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
			rows = append(rows, s.ColumnText(0))
			return nil
		}})
	}
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	if err == nil && (len(rows) != 1 || rows[0] != "ok") {
		err = fmt.Errorf("the copy failed its check: %s", findings(rows, nil))
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// publish gives the finished copy tmp its name dst: with force a rename,
// else a hard link, which fails if dst appeared meanwhile (or, where the
// file system has no hard links, a rename after a last look); then it
// syncs the directory so the name survives a crash.
func publish(tmp, dst string, force bool) error {
	exists := contract.Errorf(contract.CodeConflict, "%s already exists: pick another name, or add --force to replace it", dst)
	rename := force
	if !force {
		switch err := os.Link(tmp, dst); {
		case err == nil:
			os.Remove(tmp)
		case errors.Is(err, os.ErrExist):
			return exists
		default:
			if _, err := os.Lstat(dst); err == nil {
				return exists
			}
			rename = true
		}
	}
	if rename {
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("backup to %s: %w", dst, err)
		}
	}
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return nil // the file is complete; only its name may not be durable yet
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("backup to %s: sync directory: %w", dst, err)
	}
	return nil
}

// withoutPassword is a PostgreSQL URL with no password at all (RedactURL
// leaves a placeholder), for a command line to copy.
func withoutPassword(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
