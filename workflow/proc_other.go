//go:build !unix

package workflow

import "os/exec"

// killGroup leaves the default: only the shell itself is killed.
func killGroup(*exec.Cmd) {}
