package catalog

import "syscall"

// ctimeOf is a file's status change time in ns, which no one but root
// can set back (fileStamp).
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// pluginProcAttr puts a plugin process in a process group of its own and
// has the kernel send it SIGTERM when the daemon dies, which the sdk
// turns into the end of its whole group.
func pluginProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
