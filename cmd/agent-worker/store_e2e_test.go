//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/agent-worker/agent-worker/host/api"
)

// setFileSizeLimit gives a running process an RLIMIT_FSIZE, as `ulimit -f`
// would have at its start: writes past n bytes then fail with EFBIG.
func setFileSizeLimit(t *testing.T, pid int, n uint64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: n, Max: n}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit(%d, RLIMIT_FSIZE, %d): %v", pid, n, errno)
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// A daemon whose database can no longer grow (a file-size limit, as on a
// full disk) answers sends with "unavailable" and a message that says what
// to do, and `status` shows that writes are failing.
func TestE2EStoreWriteFailureShowsInStatus(t *testing.T) {
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("send", "@global", "before the limit")
	db := filepath.Join(c.home, api.DBFile)
	limit := max(fileSize(db), fileSize(db+"-wal")) + 64<<10
	setFileSizeLimit(t, daemon.Process.Pid, uint64(limit))

	var r result
	for i := 0; i < 1000; i++ {
		if r = c.run("send", "@global", strings.Repeat("x", 3000)); r.code != 0 {
			break
		}
	}
	if r.code != api.ExitCode(api.CodeUnavailable) || !strings.Contains(r.stderr, "cannot be written") || !strings.Contains(r.stderr, "free disk space") {
		t.Fatalf("send past the file-size limit: exit %d, stderr %q; want exit %d saying the database cannot be written and what to do",
			r.code, r.stderr, api.ExitCode(api.CodeUnavailable))
	}
	if out := c.ok("status"); !strings.Contains(out, "store:     WRITES FAILING") || !strings.Contains(out, "store: the last write failed at") {
		t.Errorf("status does not show the failing store:\n%s", out)
	}
	var st api.Health
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Store.Linked || !st.Store.Failing || st.Store.LastErrorAt == nil || !strings.Contains(st.Store.LastError, "cannot be written") {
		t.Errorf("status --json store = %+v", st.Store)
	}
}
