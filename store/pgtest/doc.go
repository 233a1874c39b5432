// Package pgtest starts throwaway PostgreSQL clusters for tests, from the
// server binaries of the machine (Debian's postgresql package), so that the
// store's PostgreSQL engine is tested against a real server without Docker.
// A test package shares one cluster per test binary and gives each test its
// own database:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Shared(t).NewDatabase(t) // dropped when t ends
//		...
//	}
//
// Without the binaries the tests skip, unless AGENT_WORKER_E2E_POSTGRES=1
// (set by make test-e2e and CI), where they fail. The server itself is
// started by internal/pgserver, which a program that is not a test (the
// benchmark, the chaos tool) uses directly, so that it does not link
// package testing. The package imports nothing else of the module, so any
// package's tests may use it.
package pgtest
