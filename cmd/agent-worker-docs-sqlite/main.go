// Command agent-worker-docs-sqlite serves the sqlite document provider as a
// plugin, on its own database file $AGENT_WORKER_DOCS_DB (never the
// daemon's).
package main

import (
	"fmt"
	"os"

	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "0.1.0"

func main() {
	path := os.Getenv("AGENT_WORKER_DOCS_DB")
	if path == "" {
		fmt.Fprintln(os.Stderr, "agent-worker-docs-sqlite: AGENT_WORKER_DOCS_DB is not set (the daemon sets it)")
		os.Exit(1)
	}
	p, err := sqlitedocs.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent-worker-docs-sqlite:", err)
		os.Exit(1)
	}
	defer p.Close()
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "sqlite", Version: version}, Docs: p})
}
