package plugins

import (
	"context"

	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

// docsFile is the sqlite provider's own database: never the daemon's.
const docsFile = "documents.db"

// DocProviders hands each workflow the document provider its context names,
// opening each provider once and closing them all with the daemon. The
// built-in file and sqlite providers run in-process; an installed docs
// plugin runs out of process (docsPlugin) behind the same interface.
type DocProviders struct {
	home    string
	catalog *Catalog
	log     hclog.Logger
	obs     Observer

	// mu guards the fields that follow.
	mu      sync.Mutex
	files   map[string]*file.Provider // by root directory, or "dir:" and the documents folder
	sqlite  *sqlitedocs.Provider
	plugins map[string]*docsPlugin // by provider name and root
}

// NewDocProviders returns the providers of the daemon on home; obs (nil
// for none) hears each docs plugin process start, stop and restart.
func NewDocProviders(home string, catalog *Catalog, obs Observer, log hclog.Logger) *DocProviders {
	if obs == nil {
		obs = nopObserver{}
	}
	return &DocProviders{home: home, catalog: catalog, log: log, obs: obs, files: map[string]*file.Provider{}, plugins: map[string]*docsPlugin{}}
}

// Resolve returns the provider of wf, its errors in the daemon's codes.
// An installed docs plugin of that name (agent-worker-docs-<name>) runs
// out of process; the first-party
// file and sqlite providers are also built in, for a daemon without
// plugins. The file provider is rooted at the workflow's directory (the
// daemon's home for standalone agents), or keeps the documents right in the
// folder the workflow names (context.documents.dir); a plugin is told that
// folder in AGENT_WORKER_DOCS_DIR.
func (d *DocProviders) Resolve(_ context.Context, wf store.Workflow) (docprovider.Provider, error) {
	p, err := d.resolve(wf)
	if err != nil {
		return nil, err
	}
	return coded{p}, nil
}

func (d *DocProviders) resolve(wf store.Workflow) (docprovider.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	root := wf.Workdir
	if root == "" {
		root = d.home
	}
	name := wf.DocsProvider
	if name == "" {
		name = "file"
	}
	if _, err := d.catalog.Lookup(plugin.KindDocs, name); err == nil || api.ErrorCode(err) != api.CodeNotFound {
		db := filepath.Join(d.home, docsFile) // the same file as the built-in sqlite provider
		if name != "sqlite" {
			db = filepath.Join(d.home, name+"-"+docsFile)
		}
		k := name + "|" + root + "|" + wf.DocsDir
		p := d.plugins[k]
		if p == nil {
			env := []string{"AGENT_WORKER_DOCS_ROOT=" + root, "AGENT_WORKER_DOCS_DB=" + db}
			if wf.DocsDir != "" {
				env = append(env, "AGENT_WORKER_DOCS_DIR="+wf.DocsDir)
			}
			p = &docsPlugin{catalog: d.catalog, name: name, dir: root, log: d.log.Named(name), obs: d.obs, env: env}
			d.plugins[k] = p
		}
		return p, nil
	}
	switch name {
	case "file":
		k := root
		if wf.DocsDir != "" {
			k = "dir:" + wf.DocsDir
		}
		p := d.files[k]
		if p == nil {
			p = file.New(root)
			if wf.DocsDir != "" {
				p = file.NewIn(wf.DocsDir)
			}
			d.files[k] = p
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
	return nil, api.Errorf(api.CodeInvalid, "workflow @%s:%s uses documents provider %q, which is neither built in (file, sqlite) nor installed as agent-worker-docs-%s", wf.Name, wf.Tag, name, name)
}

func (d *DocProviders) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.plugins {
		p.Close()
	}
	if d.sqlite != nil {
		return d.sqlite.Close()
	}
	return nil
}
