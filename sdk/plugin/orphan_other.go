//go:build !linux && !darwin

package plugin

// parentDeathSignal: none known here (orphan.go).
const parentDeathSignal = false

// dieWithParent is implemented for Linux and macOS only.
func dieWithParent() {}

// endChildGroups is implemented for Linux and macOS only.
func endChildGroups() {}
