package host

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/store"
)

// docsFile is the sqlite provider's own database: never the daemon's.
const docsFile = "documents.db"

// docProviders hands each workflow the document provider its context names,
// opening each provider once. They run in-process for now; the plugin
// system moves them out of process behind the same interface.
type docProviders struct {
	home string

	// mu guards the fields that follow.
	mu     sync.Mutex
	files  map[string]*file.Provider // by root directory
	sqlite *sqlitedocs.Provider
}

func newDocProviders(home string) *docProviders {
	return &docProviders{home: home, files: map[string]*file.Provider{}}
}

// resolve returns the provider of wf: the file provider rooted at the
// workflow's directory (the daemon's home for standalone agents), or the
// sqlite provider.
func (d *docProviders) resolve(_ context.Context, wf store.Workflow) (docprovider.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch wf.DocsProvider {
	case "", "file":
		root := wf.Workdir
		if root == "" {
			root = d.home
		}
		p := d.files[root]
		if p == nil {
			p = file.New(root)
			d.files[root] = p
		}
		return p, nil
	case "sqlite":
		if d.sqlite == nil {
			p, err := sqlitedocs.Open(filepath.Join(d.home, docsFile))
			if err != nil {
				return nil, err
			}
			d.sqlite = p
		}
		return d.sqlite, nil
	}
	return nil, api.Errorf(api.CodeInvalid, "workflow @%s:%s uses unknown documents provider %q: use file or sqlite", wf.Name, wf.Tag, wf.DocsProvider)
}

func (d *docProviders) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sqlite != nil {
		return d.sqlite.Close()
	}
	return nil
}
