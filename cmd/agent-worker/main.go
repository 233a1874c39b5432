// Command agent-worker is the one user binary: the CLI, and with `daemon`
// the daemon itself. Every command except `daemon` is a thin HTTP client.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
