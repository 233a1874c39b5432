//go:build unix && !linux

package plugin

// becomeSubreaper is Linux only.
func becomeSubreaper() bool { return false }

// endDescendants is Linux only.
func endDescendants() {}
