// Command agent-worker-docs-sqlite serves the sqlite document provider as a
// plugin, on its own database file $AGENT_WORKER_DOCS_DB (never the
// daemon's).
package main

import (
	"os"

	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "0.1.0"

func main() {
	var p docprovider.Provider = docprovider.Failing(sdk.Errorf(sdk.ErrInvalid, "AGENT_WORKER_DOCS_DB is not set (the daemon sets it)"))
	if path := os.Getenv("AGENT_WORKER_DOCS_DB"); path != "" {
		db, err := sqlitedocs.Open(path)
		if err != nil {
			p = docprovider.Failing(sdk.Errorf(sdk.ErrUnavailable, "open %s: %v", path, err))
		} else {
			defer db.Close()
			p = db
		}
	}
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "sqlite", Version: version}, Docs: p})
}
