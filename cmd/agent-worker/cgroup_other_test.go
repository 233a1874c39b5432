//go:build !linux

package main

import (
	"syscall"
	"testing"
)

// privateCgroup: cgroups are Linux only.
func privateCgroup(*testing.T) *syscall.SysProcAttr { return nil }
