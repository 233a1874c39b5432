// Command agent-worker-docs-postgres serves the postgres document provider
// as a plugin, on the database $AGENT_WORKER_DOCS_URL: the daemons of a
// cluster set it to their shared store, so that every daemon serves the
// same documents.
package main

import (
	"os"

	postgresdocs "github.com/agent-worker/agent-worker/docs-provider/postgres"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "0.1.0"

func main() {
	var p docprovider.Provider = docprovider.Failing(sdk.Errorf(sdk.ErrInvalid,
		"AGENT_WORKER_DOCS_URL is not set: the postgres documents provider needs the PostgreSQL database of a daemon started with --store postgres://… (the daemon sets it)"))
	if url := os.Getenv("AGENT_WORKER_DOCS_URL"); url != "" {
		// New does not connect: a server that is down answers "unavailable"
		// until it is back, without a restart of the plugin.
		db, err := postgresdocs.New(url)
		if err != nil {
			p = docprovider.Failing(err)
		} else {
			defer db.Close()
			p = db
		}
	}
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "postgres", Version: version}, Docs: p})
}
