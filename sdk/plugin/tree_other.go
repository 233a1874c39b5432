//go:build !unix

package plugin

// stopTreeOnTerm does nothing where process groups do not exist.
func stopTreeOnTerm(bool) {}

// becomeSubreaper is Linux only.
func becomeSubreaper() bool { return false }

// endDescendants is Linux only.
func endDescendants() {}
