package testkit

import (
	"bytes"
	"os"
	"strconv"
)

// Alive reports whether process pid runs: it exists and is not a zombie
// (a zombie has ended; only its parent has not reaped it yet).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state …": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
