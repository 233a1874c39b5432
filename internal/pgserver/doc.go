// Package pgserver starts throwaway PostgreSQL clusters from the server
// binaries of the machine (Debian's postgresql package), without Docker:
// a private temporary directory, trust authentication on 127.0.0.1 only,
// durability off, and a watchdog process that stops the server and removes
// its directory when the caller dies without calling Stop.
//
// It is for programs, not tests: the benchmark (internal/cmd/agent-worker-bench)
// and the chaos tool (internal/cmd/agent-worker-chaos) use Launch,
// CreateDatabase and Stop, and IsUnavailable to skip on a machine without
// PostgreSQL. Tests use store/pgtest, which shares one cluster per test
// binary, gives each test its own database and skips or fails through a
// testing.TB. The package imports nothing of the module and not package
// testing, so a shipped or tool binary may link it.
package pgserver
