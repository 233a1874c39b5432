//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"runtime"
)

var errNoLandlock = errors.New("Landlock is a Linux security module; " + runtime.GOOS + " has none")

// Probe reports that this system cannot confine runs.
func Probe() Status { return Status{Why: errNoLandlock.Error()} }

// Restrict cannot confine anything here.
func Restrict(Policy) error { return errNoLandlock }

// RunTool runs cmd unconfined: there is nothing to confine it with.
func RunTool(cmd *exec.Cmd, _ Policy) error { return cmd.Run() }

// StartConfined cannot confine anything here.
func StartConfined(Policy, func() error) (func(), error) { return nil, errNoLandlock }
