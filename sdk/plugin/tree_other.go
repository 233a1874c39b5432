//go:build !unix

package plugin

// stopTreeOnTerm does nothing where process groups do not exist.
func stopTreeOnTerm() {}
