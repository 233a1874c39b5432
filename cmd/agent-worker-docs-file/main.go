// Command agent-worker-docs-file serves the file document provider as a
// plugin: documents are real files under
// $AGENT_WORKER_DOCS_ROOT/.workflow/<wf>/<tag>/documents/.
package main

import (
	"fmt"
	"os"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "0.1.0"

func main() {
	root := os.Getenv("AGENT_WORKER_DOCS_ROOT")
	if root == "" {
		fmt.Fprintln(os.Stderr, "agent-worker-docs-file: AGENT_WORKER_DOCS_ROOT is not set (the daemon sets it)")
		os.Exit(1)
	}
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "file", Version: version}, Docs: file.New(root)})
}
