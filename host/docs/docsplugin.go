package docs

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/host/internal/backoff"
	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// Docs plugin timings.
const (
	docsCallTimeout = 30 * time.Second
	docsMaxBackoff  = 30 * time.Second
)

// docsBackoff is how long a crashed provider waits before its next start:
// 200 ms after the first failure, doubling to docsMaxBackoff.
var docsBackoff = backoff.Policy{Base: 200 * time.Millisecond, Max: docsMaxBackoff}

// docsPlugin is a long-lived document provider plugin process. It starts on
// first use, restarts (with backoff) after it dies or after its binary is
// replaced, and a request in flight when it dies fails with a retryable
// error instead of hanging.
type docsPlugin struct {
	catalog *catalog.Catalog
	name    string
	env     []string // where the provider keeps documents
	dir     string
	log     hclog.Logger
	obs     Observer

	// mu guards the fields that follow.
	mu       sync.Mutex
	client   *goplugin.Client
	cmd      *exec.Cmd
	sockDir  string
	sha      string
	prov     docprovider.Provider
	failures int
	retryAt  time.Time
	started  bool // once: later starts are restarts
}

var _ docprovider.Provider = (*docsPlugin)(nil)

// provider returns the running provider, starting or restarting it.
func (d *docsPlugin) provider() (docprovider.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, lookupErr := d.catalog.Lookup(plugin.KindDocs, d.name)
	if d.client != nil && !d.client.Exited() && (lookupErr != nil || p.SHA256 == d.sha) {
		return d.prov, nil
	}
	if d.client != nil {
		if d.client.Exited() {
			d.failures++
			d.retryAt = time.Now().Add(docsBackoff.Delay(d.failures, 0))
			d.log.Warn("docs provider plugin died; restarting", "failures", d.failures, "retry_at", d.retryAt)
		} else {
			d.log.Info("docs provider plugin replaced; restarting", "sha256", p.SHA256[:12])
		}
		d.stopLocked()
	}
	if wait := time.Until(d.retryAt); wait > 0 {
		return nil, sdk.Errorf(sdk.ErrUnavailable, "documents provider %s is restarting after a crash: retry in %s", d.name, wait.Round(time.Millisecond))
	}
	if lookupErr != nil {
		return nil, lookupErr
	}
	if err := d.startLocked(p); err != nil {
		d.failures++
		d.retryAt = time.Now().Add(docsBackoff.Delay(d.failures, 0))
		return nil, sdk.Errorf(sdk.ErrUnavailable, "start documents provider %s: %v", d.name, err)
	}
	return d.prov, nil
}

func (d *docsPlugin) startLocked(p api.Plugin) error {
	exe, err := d.catalog.Verified(p)
	if err != nil {
		return err
	}
	sockDir, err := catalog.MakeSocketDir(d.catalog.Runtime(), "docs")
	if err != nil {
		return err
	}
	cmd := catalog.Command(exe, p.Path, sockDir, d.dir)
	cmd.Env = append(cmd.Env, d.env...)
	client := goplugin.NewClient(pluginclient.ClientConfig(cmd, d.log))
	rpc, err := client.Client()
	if err == nil {
		d.prov, err = pluginclient.DispenseDocs(rpc)
	}
	if err != nil {
		catalog.Kill(client, cmd)
		catalog.RemoveSocketDir(sockDir)
		return err
	}
	d.client, d.cmd, d.sockDir, d.sha = client, cmd, sockDir, p.SHA256
	d.obs.PluginStarted(plugin.KindDocs)
	if d.started {
		d.obs.PluginRestarted(plugin.KindDocs, d.name)
	}
	d.started = true
	d.log.Info("docs provider plugin started", "pid", cmd.Process.Pid, "version", p.Version)
	return nil
}

func (d *docsPlugin) stopLocked() {
	if d.client != nil {
		catalog.Kill(d.client, d.cmd)
		catalog.RemoveSocketDir(d.sockDir)
		d.obs.PluginStopped(plugin.KindDocs)
	}
	d.client, d.cmd, d.prov = nil, nil, nil
}

// Close stops the plugin process.
func (d *docsPlugin) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

// call runs one provider call with a deadline; a transport failure is
// reported as unavailable (retryable) whatever gRPC said.
func call[T any](d *docsPlugin, ctx context.Context, fn func(context.Context, docprovider.Provider) (T, error)) (T, error) {
	var zero T
	p, err := d.provider()
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, docsCallTimeout)
	defer cancel()
	out, err := fn(ctx, p)
	if err != nil && sdk.Class(err) == nil {
		if errors.Is(err, context.DeadlineExceeded) || d.exited() {
			return zero, sdk.Errorf(sdk.ErrUnavailable, "documents provider %s did not answer: %v; retry", d.name, err)
		}
	}
	return out, err
}

func (d *docsPlugin) exited() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.client == nil || d.client.Exited()
}

func (d *docsPlugin) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	return call(d, ctx, func(ctx context.Context, p docprovider.Provider) (string, error) { return p.Read(ctx, r) })
}

func (d *docsPlugin) Write(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(d, ctx, func(ctx context.Context, p docprovider.Provider) (struct{}, error) {
		return struct{}{}, p.Write(ctx, r, content)
	})
	return err
}

func (d *docsPlugin) Append(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(d, ctx, func(ctx context.Context, p docprovider.Provider) (struct{}, error) {
		return struct{}{}, p.Append(ctx, r, content)
	})
	return err
}

func (d *docsPlugin) Create(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(d, ctx, func(ctx context.Context, p docprovider.Provider) (struct{}, error) {
		return struct{}{}, p.Create(ctx, r, content)
	})
	return err
}

func (d *docsPlugin) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	return call(d, ctx, func(ctx context.Context, p docprovider.Provider) ([]docprovider.Info, error) { return p.List(ctx, s) })
}
