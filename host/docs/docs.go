package docs

import (
	"context"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/docs-provider/file"
	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

// docsFile is the sqlite provider's own database: never the daemon's.
const docsFile = "documents.db"

// postgresDocs is the documents provider of a cluster (UseStore): the
// plugin agent-worker-docs-postgres, on the daemons' shared database.
const postgresDocs = "postgres"

// DocProviders hands each workflow the document provider its context names,
// opening each provider once and closing them all with the daemon. The
// built-in file and sqlite providers run in-process; an installed docs
// plugin runs out of process (docsPlugin) behind the same interface.
type DocProviders struct {
	home    string
	catalog *catalog.Catalog
	log     hclog.Logger
	obs     Observer

	// mu guards the fields that follow.
	mu       sync.Mutex
	storeURL string                    // the cluster's PostgreSQL database (UseStore), or ""
	files    map[string]*file.Provider // by root directory, or "dir:" and the documents folder
	sqlite   *sqlitedocs.Provider
	plugins  map[string]*docsPlugin // by provider name and root; the postgres one by name alone
}

// NewDocProviders returns the providers of the daemon on home; obs (nil
// for none) hears each docs plugin process start, stop and restart.
func NewDocProviders(home string, catalog *catalog.Catalog, obs Observer, log hclog.Logger) *DocProviders {
	if obs == nil {
		obs = nopObserver{}
	}
	return &DocProviders{home: home, catalog: catalog, log: log, obs: obs, files: map[string]*file.Provider{}, plugins: map[string]*docsPlugin{}}
}

// UseStore tells the providers that the daemon keeps its state in the
// PostgreSQL database at url, which the daemons of a cluster share. A
// workflow that names no documents provider (and no documents folder) then
// keeps its documents in that database too, through the installed plugin
// agent-worker-docs-postgres, given url in AGENT_WORKER_DOCS_URL: files in
// one daemon's home would be invisible to the others. A workflow that
// names its provider keeps it. Call it before the first Resolve.
func (d *DocProviders) UseStore(url string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.storeURL = url
}

// Resolve returns the provider of wf, its errors in the daemon's codes.
// A workflow that names none gets file, or postgres on a PostgreSQL store
// (UseStore). An installed docs plugin of that name
// (agent-worker-docs-<name>) runs out of process; the first-party file and
// sqlite providers are also built in, for a daemon without plugins, and
// postgres is only ever the plugin. The file provider is rooted at the workflow's directory (the
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
	switch {
	case name != "":
	case d.storeURL != "" && wf.DocsDir == "":
		name = postgresDocs
	default:
		name = "file"
	}
	if name == postgresDocs {
		return d.postgresLocked(wf)
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

// postgresLocked returns the one postgres plugin of the daemon: every
// workflow's documents are in the same database, so one process (and its
// few connections) serves them all. It alone is told the store's URL.
func (d *DocProviders) postgresLocked(wf store.Workflow) (docprovider.Provider, error) {
	if d.storeURL == "" {
		return nil, api.Errorf(api.CodeInvalid, "workflow @%s:%s uses documents provider postgres, which keeps documents in the PostgreSQL database of a cluster, but this daemon keeps its state in SQLite: start it with --store postgres://…, or use file or sqlite",
			wf.Name, wf.Tag)
	}
	if _, err := d.catalog.Lookup(plugin.KindDocs, postgresDocs); api.ErrorCode(err) == api.CodeNotFound {
		why := "uses documents provider postgres"
		if wf.DocsProvider == "" {
			why = "names no documents provider, so on a PostgreSQL store (--store postgres://…) its documents go to that database, shared by every daemon,"
		}
		return nil, api.Errorf(api.CodeInvalid, "workflow @%s:%s %s but the plugin agent-worker-docs-postgres is not installed: install it into a plugins directory (%s; make plugins builds it), or name a provider (context: {documents: file}) to keep the documents on this daemon only",
			wf.Name, wf.Tag, why, strings.Join(d.catalog.Dirs(), ", "))
	}
	p := d.plugins[postgresDocs]
	if p == nil {
		p = &docsPlugin{catalog: d.catalog, name: postgresDocs, dir: d.home, log: d.log.Named(postgresDocs), obs: d.obs,
			env: []string{"AGENT_WORKER_DOCS_URL=" + d.storeURL}}
		d.plugins[postgresDocs] = p
	}
	return p, nil
}

// Close stops every docs plugin and closes the built-in sqlite provider.
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
