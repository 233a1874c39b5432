package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// Plugin executable name prefixes; what follows is the plugin's name.
const (
	backendPrefix = "agent-worker-backend-"
	docsPrefix    = "agent-worker-docs-"
)

// Catalog timings.
const (
	fingerprintTimeout = 5 * time.Second
	debounce           = 150 * time.Millisecond
	rescanEvery        = time.Minute
)

// Catalog knows every plugin binary in the plugins directories: its name,
// kind, version and sha256, or why it cannot be used. It watches the
// directories so that a binary dropped in, replaced or removed is seen
// without a restart. Runs in flight keep the binary they started with.
type Catalog struct {
	dirs    []string
	runtime string // parent of the fingerprint processes' socket dirs
	log     hclog.Logger

	// mu guards byPath.
	mu     sync.RWMutex
	byPath map[string]api.Plugin

	// changed is signalled after every (re)check, for tests and listeners.
	changed chan struct{}
}

// NewCatalog returns a catalog over dirs, earlier directories winning when
// two hold a plugin of the same kind and name.
func NewCatalog(dirs []string, runtime string, log hclog.Logger) *Catalog {
	return &Catalog{dirs: dirs, runtime: runtime, log: log, byPath: map[string]api.Plugin{}, changed: make(chan struct{}, 1)}
}

// pluginName splits an executable's file name into kind and name.
func pluginName(file string) (kind, name string, ok bool) {
	switch {
	case strings.HasPrefix(file, backendPrefix):
		kind, name = plugin.KindBackend, file[len(backendPrefix):]
	case strings.HasPrefix(file, docsPrefix):
		kind, name = plugin.KindDocs, file[len(docsPrefix):]
	default:
		return "", "", false
	}
	return kind, name, api.ValidateScopeName("plugin", name) == nil && !strings.ContainsAny(name, ".")
}

// Scan checks every file in every directory; used at start-up, after an
// event overflow and on a slow ticker as a safety net.
func (c *Catalog) Scan(ctx context.Context) {
	seen := map[string]bool{}
	for _, dir := range c.dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				c.log.Warn("read plugins dir", "dir", dir, "error", err)
			}
			continue
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if _, _, ok := pluginName(e.Name()); ok {
				seen[path] = true
				c.check(ctx, path)
			}
		}
	}
	c.mu.Lock()
	for path := range c.byPath {
		if !seen[path] {
			delete(c.byPath, path)
			c.log.Info("plugin removed", "path", path)
		}
	}
	c.mu.Unlock()
	c.notify()
}

// check (re)examines one path: gone, unchanged, or fingerprinted anew.
func (c *Catalog) check(ctx context.Context, path string) { c.examine(ctx, path, false) }

// Refresh fingerprints every plugin again, even unchanged ones, so that
// what a plugin reports about its surroundings (a CLI installed or removed
// since) is current; `agent-worker plugins` calls it.
func (c *Catalog) Refresh(ctx context.Context) {
	c.mu.RLock()
	paths := make([]string, 0, len(c.byPath))
	for p := range c.byPath {
		paths = append(paths, p)
	}
	c.mu.RUnlock()
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Go(func() { c.examine(ctx, p, true) })
	}
	wg.Wait()
}

func (c *Catalog) examine(ctx context.Context, path string, force bool) {
	kind, name, ok := pluginName(filepath.Base(path))
	if !ok {
		return
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		c.mu.Lock()
		if _, had := c.byPath[path]; had {
			delete(c.byPath, path)
			c.log.Info("plugin removed", "path", path)
		}
		c.mu.Unlock()
		return
	}
	sum, err := fileSHA256(path)
	p := api.Plugin{Name: name, Kind: kind, Path: path, SHA256: sum, CheckedAt: time.Now().UTC()}
	c.mu.RLock()
	old, had := c.byPath[path]
	c.mu.RUnlock()
	if had && err == nil && old.SHA256 == sum && old.Error == "" && !force {
		return // same bytes, already known good
	}
	if err != nil {
		p.Error = "read binary: " + err.Error()
	} else if info, err := c.fingerprint(ctx, path, sum); err != nil {
		p.Error = err.Error()
	} else if info.Kind != kind || info.Name != name {
		p.Error = fmt.Sprintf("the binary is named as %s %q but says it is %s %q: rename it agent-worker-%s-%s", kind, name, info.Kind, info.Name, info.Kind, info.Name)
	} else {
		p.Version, p.APIVersions, p.Capabilities, p.Status = info.Version, info.APIVersions, info.Capabilities, info.Status
	}
	c.mu.Lock()
	c.byPath[path] = p
	c.mu.Unlock()
	if p.Error != "" {
		c.log.Warn("plugin unusable", "path", path, "error", p.Error)
	} else {
		c.log.Info("plugin ready", "kind", kind, "name", name, "version", p.Version, "sha256", sum[:12])
	}
}

// fingerprint starts the binary once, asks for its Info and stops it. A
// binary that is busy being written (ETXTBSY) is retried briefly.
func (c *Catalog) fingerprint(ctx context.Context, path, sum string) (plugin.Info, error) {
	var info plugin.Info
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		info, err = c.fingerprintOnce(ctx, path, sum)
		if err == nil || !errors.Is(err, syscall.ETXTBSY) {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	return info, err
}

func (c *Catalog) fingerprintOnce(ctx context.Context, path, sum string) (plugin.Info, error) {
	sockDir, err := os.MkdirTemp(c.runtime, "aw-fp-")
	if err != nil {
		return plugin.Info{}, err
	}
	defer os.RemoveAll(sockDir)
	cmd := pluginCommand(path, sockDir, filepath.Dir(path))
	checksum, _ := hex.DecodeString(sum)
	cfg := plugin.ClientConfig(cmd, checksum, c.log.Named("fingerprint").With("plugin", filepath.Base(path)))
	cfg.StartTimeout = fingerprintTimeout
	client := goplugin.NewClient(cfg)
	defer killPlugin(client, cmd)
	rpc, err := client.Client()
	if err != nil {
		return plugin.Info{}, fmt.Errorf("not a working agent-worker plugin (handshake failed: %v)", err)
	}
	ic, err := plugin.DispenseInfo(rpc)
	if err != nil {
		return plugin.Info{}, fmt.Errorf("dispense info: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, fingerprintTimeout)
	defer cancel()
	info, err := ic.GetInfo(ctx)
	if err != nil {
		return plugin.Info{}, fmt.Errorf("plugin did not answer GetInfo: %w", err)
	}
	return info, nil
}

// Lookup returns the usable plugin of kind and name, searching the
// directories in order.
func (c *Catalog) Lookup(kind, name string) (api.Plugin, error) {
	for _, p := range c.List() {
		if p.Kind == kind && p.Name == name && !p.Shadowed {
			if p.Error != "" {
				return p, api.Errorf(api.CodeUnavailable, "%s plugin %q at %s is broken: %s", kind, name, p.Path, p.Error)
			}
			return p, nil
		}
	}
	return api.Plugin{}, api.Errorf(api.CodeNotFound, "no %s plugin %q: install agent-worker-%s-%s into a plugins directory (%s); `agent-worker plugins` lists what is there",
		kind, name, kind, name, strings.Join(c.dirs, ", "))
}

// List returns every plugin found, in directory order, marking shadowed ones.
func (c *Catalog) List() []api.Plugin {
	c.mu.RLock()
	out := make([]api.Plugin, 0, len(c.byPath))
	for _, p := range c.byPath {
		out = append(out, p)
	}
	c.mu.RUnlock()
	rank := func(p api.Plugin) int {
		for i, d := range c.dirs {
			if filepath.Dir(p.Path) == d {
				return i
			}
		}
		return len(c.dirs)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return rank(a) < rank(b)
	})
	for i := 1; i < len(out); i++ {
		if out[i].Kind == out[i-1].Kind && out[i].Name == out[i-1].Name {
			out[i].Shadowed = true
		}
	}
	return out
}

// Names lists the usable plugins of kind.
func (c *Catalog) Names(kind string) []string {
	var out []string
	for _, p := range c.List() {
		if p.Kind == kind && p.Error == "" && !p.Shadowed {
			out = append(out, p.Name)
		}
	}
	return out
}

// Dirs are the directories searched, in order.
func (c *Catalog) Dirs() []string { return c.dirs }

func (c *Catalog) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Watch keeps the catalog current until ctx ends: it watches the
// directories (never files), debounces events per path and then looks at
// the file as it is, because editors and installers produce many event
// sequences for one change (reference/go-libraries.md §6).
func (c *Catalog) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch plugins: %w", err)
	}
	defer w.Close()
	for _, d := range c.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.log.Warn("create plugins dir", "dir", d, "error", err)
			continue
		}
		if err := w.Add(d); err != nil {
			c.log.Warn("watch plugins dir", "dir", d, "error", err)
		}
	}
	c.Scan(ctx)
	quiet := newDebouncer(debounce)
	defer quiet.stop()
	rescan := time.NewTicker(rescanEvery)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			base := filepath.Base(ev.Name)
			if _, _, ok := pluginName(base); !ok || strings.HasSuffix(base, "~") || strings.HasSuffix(base, ".tmp") {
				continue
			}
			quiet.touch(ctx, ev.Name)
		case path := <-quiet.C:
			quiet.done(path)
			c.check(ctx, path)
			c.notify()
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			c.log.Warn("plugins watcher", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				c.Scan(ctx)
			}
		case <-rescan.C:
			c.Scan(ctx)
		}
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pluginCommand prepares a plugin process: its own process group (so the
// whole tree can be killed), killed if the daemon dies, stdin closed, a
// short private socket directory, and only the environment it needs:
// pluginEnv, then extra (an agent's own `env:`, which wins over the
// daemon's), then the variables the daemon itself sets, which win over
// both. go-plugin adds nothing of the daemon's (plugin.ClientConfig sets
// SkipHostEnv), so cmd.Env is the plugin's whole environment.
func pluginCommand(path, sockDir, dir string, extra ...string) *exec.Cmd {
	cmd := exec.Command(path)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Env = append(append(pluginEnv(), extra...), "PLUGIN_UNIX_SOCKET_DIR="+sockDir, "TMPDIR="+sockDir)
	return cmd
}

// pluginEnvNames are the daemon's variables every plugin inherits: what a
// process needs to run at all (PATH, HOME, user, locale, time zone), to
// reach the network the way the user does (proxies, CA bundles), to find
// the CLIs' own config (XDG dirs), and the variables the first-party
// backends document that they read.
var pluginEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true, "REQUESTS_CA_BUNDLE": true,
	"XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "XDG_STATE_HOME": true,
}

// pluginEnvPrefixes and pluginEnvSuffixes widen pluginEnvNames to families:
// locale categories, the CLI backends' own settings and those of their
// providers, and every provider's API key and base URL (the sdk backend
// reads <PROVIDER>_API_KEY and <PROVIDER>_BASE_URL), in either case for
// proxies.
var (
	pluginEnvPrefixes = []string{"LC_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "CURSOR_"}
	pluginEnvSuffixes = []string{"_API_KEY", "_BASE_URL", "_PROXY", "_proxy"}
)

// pluginEnv is the part of the daemon's environment plugins inherit. The
// rest (the daemon's own AGENT_WORKER_* settings, tokens, any secret the
// daemon was started with) never reaches a plugin or what its agent runs.
func pluginEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); inPluginEnv(k) {
			env = append(env, kv)
		}
	}
	return env
}

func inPluginEnv(name string) bool {
	if pluginEnvNames[name] {
		return true
	}
	for _, p := range pluginEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range pluginEnvSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// killPlugin stops a plugin client and then its whole process group, so
// nothing it started outlives it.
func killPlugin(client *goplugin.Client, cmd *exec.Cmd) {
	client.Kill()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
