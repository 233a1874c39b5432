// Command agent-worker-docs-file serves the file document provider as a
// plugin: documents are real files under
// $AGENT_WORKER_DOCS_ROOT/.workflow/<wf>/<tag>/documents/, or right in
// $AGENT_WORKER_DOCS_DIR when the workflow names its documents folder.
package main

import (
	"os"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

var version = "0.1.0"

func main() {
	var p docprovider.Provider = docprovider.Failing(sdk.Errorf(sdk.ErrInvalid, "AGENT_WORKER_DOCS_ROOT is not set (the daemon sets it)"))
	if dir := os.Getenv("AGENT_WORKER_DOCS_DIR"); dir != "" {
		p = file.NewIn(dir)
	} else if root := os.Getenv("AGENT_WORKER_DOCS_ROOT"); root != "" {
		p = file.New(root)
	}
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "file", Version: version}, Docs: p})
}
