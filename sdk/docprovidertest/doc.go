// Package docprovidertest is the conformance suite for document providers,
// in the manner of containerd's snapshots/testsuite: every implementation of
// docprovider.Provider, first-party or third-party, calls Run from its own
// tests, so the daemon can rely on the same behaviour (errors, ordering,
// atomic appends, scope isolation, name checks) whichever provider a
// workflow picks.
package docprovidertest
