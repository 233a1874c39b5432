package catalog

import "syscall"

// ctimeOf is a file's status change time in ns, which no one but root
// can set back (fileStamp).
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }

// pluginProcAttr puts a plugin process in a process group of its own.
// macOS has no parent-death signal: a plugin built on the sdk watches its
// parent instead and, when the daemon is gone, stops as it would on the
// daemon's SIGTERM (sdk/plugin, orphan_darwin.go). A plugin not built on
// the sdk outlives a daemon killed with SIGKILL there.
func pluginProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
