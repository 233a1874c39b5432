package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

// PluginDirs are the directories a daemon started with cfg searches for
// plugins, in order: what `agent-worker doctor` examines when no daemon
// runs.
func PluginDirs(cfg Config) []string { return pluginDirs(cfg) }

// StorePath is where a daemon started with cfg keeps its state: the
// PostgreSQL URL it was given, or the SQLite file in its home.
func StorePath(cfg Config) string {
	if cfg.Store != "" {
		return cfg.Store
	}
	return filepath.Join(cfg.Home, api.DBFile)
}

// DiskFree is the free space of the file system holding path (or, for a
// path not made yet, its nearest existing parent) that an unprivileged
// process may use.
func DiskFree(path string) api.Disk {
	d := api.Disk{Path: path}
	for {
		var st unix.Statfs_t
		err := unix.Statfs(path, &st)
		if err == nil {
			d.FreeBytes = uint64(st.Bavail) * uint64(st.Bsize)
			return d
		}
		parent := filepath.Dir(path)
		if !os.IsNotExist(err) || parent == path {
			d.Error = fmt.Sprintf("statfs %s: %v", path, err)
			return d
		}
		path = parent
	}
}

// SQLiteBytes is the size of a SQLite database file with its write-ahead
// log; 0 for a PostgreSQL store or a file not made yet.
func SQLiteBytes(path string) int64 {
	if store.IsPostgresURL(path) {
		return 0
	}
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

// doctor is GET /doctor: what only the daemon's own process can tell
// `agent-worker doctor`.
func (h *Host) doctor(context.Context) contract.Doctor {
	return contract.Doctor{
		Env:          catalog.EnvNames(),
		DefaultModel: h.cfg.DefaultModel,
		Disk:         DiskFree(h.cfg.Home),
		StoreBytes:   SQLiteBytes(StorePath(h.cfg)),
	}
}
