//go:build unix

package workflow

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd lead its own process group and kills the whole group
// when its context ends.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
