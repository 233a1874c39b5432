// Package testkit is what the module's tests share, so that each rule is
// kept in one place: waiting on a condition with a deadline that fails
// with what it waited for (never a sleep in place of an event), the
// processes of this machine, addresses nothing listens on, and the
// repository's binaries built once per test process, with the race
// detector when the test binary has it.
//
// Only _test.go files import it; it imports nothing of the daemon, so
// the plugin side (sdk, plugins, docs-provider) may use it as well.
package testkit
