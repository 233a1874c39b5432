package catalog

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/agent-worker/agent-worker/host/internal/fswatch"
	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// Plugin executable name prefixes; what follows is the plugin's name.
const (
	backendPrefix = "agent-worker-backend-"
	docsPrefix    = "agent-worker-docs-"
)

// Catalog timings.
const (
	// DefaultPluginTimeout bounds one examination of a plugin binary: its
	// start, the go-plugin handshake and its GetInfo answer together.
	DefaultPluginTimeout = 5 * time.Second
	debounce             = 150 * time.Millisecond
	rescanEvery          = time.Minute
	// statusFresh: a healthy plugin examined this recently is not started
	// again when `agent-worker plugins` asks for fresh statuses.
	statusFresh = 5 * time.Second
	// maxExamining bounds how many binaries are examined at once.
	maxExamining = 8
	// pluginExitGrace is how long go-plugin may take to stop a plugin
	// before Kill kills its process group.
	pluginExitGrace = 3 * time.Second
)

// Catalog knows every plugin binary in the plugins directories: its name,
// kind, version and sha256, or why it cannot be used. It watches the
// directories so that a binary dropped in, replaced or removed is seen
// without a restart. Runs in flight keep the binary they started with.
// What runs is never the file in the plugins directory but the private
// copy of the bytes the catalog hashed (verify.go).
//
// Binaries are examined concurrently, each within a deadline; one that
// misses it is killed with its whole process group and listed broken. A
// broken binary is remembered by its bytes and not started again until
// the file changes, so a bad file costs one process, once.
type Catalog struct {
	dirs    []string
	copies  string // the private directory of verified copies
	runtime string // parent of the fingerprint processes' socket dirs
	timeout time.Duration
	log     hclog.Logger

	// copyMu serialises publishing verified copies and removing unused ones.
	copyMu sync.Mutex

	// mu guards the fields that follow.
	mu         sync.RWMutex
	byPath     map[string]entry
	examining  map[string]bool // paths being examined now
	again      map[string]bool // paths that changed while being examined
	refreshing chan struct{}   // closed when the Refresh under way ends; nil if none
	making     map[string]int  // sha256s of verified copies being made, which gc keeps
	suspects   map[string]bool // paths whose verified copy failed its check

	// kick tells Watch that suspect recorded a path.
	kick chan struct{}

	// changed is signalled after every (re)check, for tests and listeners.
	changed chan struct{}
	// subs are Subscribe's channels, signalled like changed; guarded by mu.
	subs map[chan struct{}]bool
}

// entry is what the catalog knows about one file.
type entry struct {
	api.Plugin
	// stamp is the file as last examined; a file with the same stamp is
	// not examined again.
	stamp fileStamp
	// copyStamp is the verified copy (Plugin.ExecPath) as written; a start
	// refuses a copy that no longer matches it.
	copyStamp fileStamp
	// ran is set when the result came from starting the binary (good or
	// broken): the same bytes are never started again for it.
	ran bool
}

// fileStamp tells a changed file from an unchanged one without reading
// it: installs replace the inode or the mtime, chmod changes the mode, and
// any write or chmod moves the ctime, which no one but root can set back.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime int64 // ns
	ctime int64 // ns
	mode  os.FileMode
}

func stampOf(st os.FileInfo) fileStamp {
	s := fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano(), mode: st.Mode()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.ino = sys.Ino
		s.ctime = ctimeOf(sys)
	}
	return s
}

// NewCatalog returns a catalog over dirs, earlier directories winning when
// two hold a plugin of the same kind and name. copies is the private
// directory of verified copies (VerifiedDir of the daemon's home); timeout
// bounds the examination of one binary (0: DefaultPluginTimeout).
func NewCatalog(dirs []string, copies, runtime string, timeout time.Duration, log hclog.Logger) *Catalog {
	if timeout <= 0 {
		timeout = DefaultPluginTimeout
	}
	return &Catalog{dirs: dirs, copies: copies, runtime: runtime, timeout: timeout, log: log, byPath: map[string]entry{},
		examining: map[string]bool{}, again: map[string]bool{}, making: map[string]int{}, suspects: map[string]bool{},
		kick: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
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

// Scan checks every file in every directory, concurrently; used at
// start-up, after an event overflow and on a slow ticker as a safety net.
// It returns when every file has been looked at, which the per-binary
// deadline bounds.
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
			if _, _, ok := pluginName(e.Name()); ok {
				seen[filepath.Join(dir, e.Name())] = true
			}
		}
	}
	slots := make(chan struct{}, maxExamining)
	var wg sync.WaitGroup
	for path := range seen {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			c.check(ctx, path)
			c.notify()
		})
	}
	wg.Wait()
	c.mu.Lock()
	for path := range c.byPath {
		if _, err := os.Lstat(path); !seen[path] && errors.Is(err, os.ErrNotExist) {
			delete(c.byPath, path)
			c.log.Info("plugin removed", "path", path)
		}
	}
	c.mu.Unlock()
	c.gc()
	c.notify()
}

// check examines path. If it is being examined already, that examination
// looks again when it ends, so one path never runs twice at once and the
// last change always wins.
func (c *Catalog) check(ctx context.Context, path string) {
	c.mu.Lock()
	if c.examining[path] {
		c.again[path] = true
		c.mu.Unlock()
		return
	}
	c.examining[path] = true
	c.mu.Unlock()
	for {
		c.examine(ctx, path)
		c.mu.Lock()
		if !c.again[path] || ctx.Err() != nil {
			delete(c.examining, path)
			delete(c.again, path)
			c.mu.Unlock()
			return
		}
		delete(c.again, path)
		c.mu.Unlock()
	}
}

// examine looks at one path as it is now: gone, unchanged, not usable as
// it stands (not executable, not a file), the same bytes as a binary
// already examined, or new bytes, which it fingerprints. Whatever it
// hashes it also copies (verifyCopy), and the fingerprint runs the copy.
func (c *Catalog) examine(ctx context.Context, path string) {
	kind, name, ok := pluginName(filepath.Base(path))
	if !ok {
		return
	}
	st, statErr := os.Stat(path)
	c.mu.RLock()
	old, had := c.byPath[path]
	c.mu.RUnlock()
	if errors.Is(statErr, os.ErrNotExist) {
		if had {
			c.mu.Lock()
			delete(c.byPath, path)
			c.mu.Unlock()
			c.log.Info("plugin removed", "path", path)
			c.gc()
		}
		return
	}
	e := entry{Plugin: api.Plugin{Name: name, Kind: kind, Path: path, CheckedAt: time.Now().UTC()}}
	switch {
	case statErr != nil:
		e.Error = "cannot read it: " + statErr.Error()
	case !st.Mode().IsRegular():
		e.Error = "not a regular file: a plugin is an executable file named agent-worker-" + kind + "-" + name
	default:
		e.stamp = stampOf(st)
		if had && old.stamp == e.stamp {
			return // unchanged since it was examined
		}
		if st.Mode()&0o111 == 0 {
			e.Error = "installed but not executable: chmod +x " + path
			break
		}
		sum, exe, copyStamp, release, err := c.verifyCopy(path)
		if err != nil {
			e.Error = err.Error()
			e.stamp = fileStamp{} // not a verdict on the file: try again at the next scan
			break
		}
		defer release() // once the entry naming the copy is stored
		e.SHA256, e.ExecPath, e.copyStamp = sum, exe, copyStamp
		if had && old.ran && old.SHA256 == sum {
			// Touched or moved, same bytes: same result.
			old.stamp, old.ExecPath, old.copyStamp = e.stamp, exe, copyStamp
			e = old
			break
		}
		if twin, ok := c.examined(kind, name, sum); ok {
			// The same bytes under the same name in another folder: the
			// same answer, without starting them again.
			e.ran, e.Error = true, twin.Error
			e.Version, e.APIVersions, e.Capabilities, e.Status = twin.Version, twin.APIVersions, twin.Capabilities, twin.Status
			break
		}
		e.ran = true
		info, err := c.fingerprint(ctx, exe, path)
		switch {
		case err != nil && ctx.Err() != nil:
			return // the daemon is stopping: no verdict
		case err != nil:
			e.Error = err.Error() + " (not started again until the file changes)"
		case info.Kind != kind || info.Name != name:
			e.Error = fmt.Sprintf("the binary is named as %s %q but says it is %s %q: rename it agent-worker-%s-%s", kind, name, info.Kind, info.Name, info.Kind, info.Name)
		default:
			e.Version, e.APIVersions, e.Capabilities, e.Status = info.Version, info.APIVersions, info.Capabilities, info.Status
		}
	}
	c.mu.Lock()
	c.byPath[path] = e
	c.mu.Unlock()
	if old.ExecPath != e.ExecPath {
		c.gc()
	}
	switch {
	case had && old.Error == e.Error && old.SHA256 == e.SHA256:
		// nothing new to say
	case e.Error != "":
		c.log.Warn("plugin unusable", "path", path, "error", e.Error)
	default:
		c.log.Info("plugin ready", "kind", kind, "name", name, "version", e.Version, "sha256", e.SHA256[:12])
	}
}

// examined returns an entry of another path whose binary, the same bytes
// under the same kind and name, was started for its verdict.
func (c *Catalog) examined(kind, name, sum string) (entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.byPath {
		if e.ran && e.SHA256 == sum && e.Kind == kind && e.Name == name {
			return e, true
		}
	}
	return entry{}, false
}

// Refresh asks the healthy plugins again what they find about their
// surroundings (a CLI installed or removed since), for `agent-worker
// plugins`. It cannot hang and never starts a broken binary: plugins
// asked less than statusFresh ago are skipped, the others are asked
// concurrently within the plugin timeout, one that does not answer keeps
// its last result, and callers arriving while a refresh is under way wait
// for that one instead of starting more processes.
func (c *Catalog) Refresh(ctx context.Context) {
	c.mu.Lock()
	wait := c.refreshing
	if wait != nil {
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		return
	}
	done := make(chan struct{})
	c.refreshing = done
	var stale []entry
	for _, e := range c.byPath {
		if e.Error == "" && e.ran && time.Since(e.CheckedAt) > statusFresh {
			stale = append(stale, e)
		}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.refreshing = nil
		c.mu.Unlock()
		close(done)
	}()
	// Shared with the callers waiting: one leaving early must not cut it short.
	ctx = context.WithoutCancel(ctx)
	slots := make(chan struct{}, maxExamining)
	var wg sync.WaitGroup
	for _, e := range stale {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			c.refreshOne(ctx, e)
		})
	}
	wg.Wait()
}

// refreshOne asks one healthy plugin for its Info again and keeps the
// answer if the file is still the one examined.
func (c *Catalog) refreshOne(ctx context.Context, old entry) {
	exe, err := c.Verified(old.Plugin)
	if err != nil {
		c.log.Warn("plugin status not refreshed", "path", old.Path, "error", err)
		return
	}
	info, err := c.fingerprint(ctx, exe, old.Path)
	if err != nil {
		c.log.Warn("plugin did not refresh its status; keeping the last one", "path", old.Path, "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.byPath[old.Path]
	if !ok || cur.SHA256 != old.SHA256 || cur.stamp != old.stamp || cur.Error != "" || info.Kind != cur.Kind || info.Name != cur.Name {
		return // changed meanwhile; the watcher examines it
	}
	cur.Version, cur.APIVersions, cur.Capabilities, cur.Status = info.Version, info.APIVersions, info.Capabilities, info.Status
	cur.CheckedAt = time.Now().UTC()
	c.byPath[old.Path] = cur
}

// fingerprint starts the verified copy exe of the binary at path once,
// asks for its Info and stops it, all within the plugin timeout. A copy
// just written may still be open for writing in a process forked
// meanwhile (ETXTBSY): that is retried briefly.
func (c *Catalog) fingerprint(ctx context.Context, exe, path string) (plugin.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		info, err := c.fingerprintOnce(ctx, exe, path)
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt == 4 {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, err
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
}

func (c *Catalog) fingerprintOnce(ctx context.Context, exe, path string) (plugin.Info, error) {
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if ctx.Err() != nil || left <= 0 {
		return plugin.Info{}, fmt.Errorf("no time left to start it: %w", context.DeadlineExceeded)
	}
	sockDir, err := MakeSocketDir(c.runtime, "fp")
	if err != nil {
		return plugin.Info{}, err
	}
	defer RemoveSocketDir(sockDir)
	cmd := Command(exe, path, sockDir, filepath.Dir(path))
	cfg := pluginclient.ClientConfig(cmd, c.log.Named("fingerprint").With("plugin", filepath.Base(path)))
	cfg.StartTimeout = left
	client := goplugin.NewClient(cfg)
	rpc, err := client.Client()
	if err != nil {
		// It never became a plugin: nothing to stop gracefully, and what
		// it started may hold its output open, which go-plugin waits for.
		killGroup(cmd)
		Kill(client, cmd)
		return plugin.Info{}, HandshakeError(err, c.timeout)
	}
	defer Kill(client, cmd)
	ic, err := pluginclient.DispenseInfo(rpc)
	if err != nil {
		return plugin.Info{}, fmt.Errorf("dispense info: %w", err)
	}
	info, err := ic.GetInfo(ctx)
	if err != nil {
		return plugin.Info{}, fmt.Errorf("plugin did not answer GetInfo within %s (it was stopped): %w", c.timeout, err)
	}
	return info, nil
}

// HandshakeError says in a user's words why a binary did not become a
// plugin; go-plugin's own text (sometimes several lines) follows.
func HandshakeError(err error, timeout time.Duration) error {
	msg := err.Error()
	detail := strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	if len(detail) > 300 {
		detail = strings.ToValidUTF8(detail[:300], "") + "…"
	}
	switch {
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("no plugin handshake within %s (is it an agent-worker plugin?): it was killed", timeout)
	case strings.Contains(msg, "incompatible API version with plugin"):
		return fmt.Errorf("it speaks another plugin protocol version than this daemon (%d): rebuild it against this agent-worker's sdk, or upgrade agent-worker (handshake failed: %s)", plugin.ProtocolVersion, detail)
	case strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return fmt.Errorf("not a working agent-worker plugin: it ended or closed its stdout before the plugin handshake (handshake failed: %s)", detail)
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("not a working agent-worker plugin: it printed something else than the plugin handshake on stdout (handshake failed: %s)", detail)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("not a program this system can run (exec format error): %w", err)
	}
	return fmt.Errorf("not a working agent-worker plugin (handshake failed: %w)", err)
}

// Lookup returns the usable plugin of kind and name, searching the
// directories in order.
func (c *Catalog) Lookup(kind, name string) (api.Plugin, error) {
	for _, p := range c.List() {
		if p.Kind == kind && p.Name == name && !p.Shadowed {
			if p.Error != "" {
				return p, brokenError(api.CodeUnavailable, p)
			}
			return p, nil
		}
	}
	return api.Plugin{}, api.Errorf(api.CodeNotFound, "no %s plugin %q: install agent-worker-%s-%s into a plugins directory (%s); `agent-worker plugins` lists what is there",
		kind, name, kind, name, strings.Join(c.dirs, ", "))
}

// Unusable refuses a name that is installed but broken (not executable,
// not a plugin, hanging), with the reason and what to do, so that `new`
// and a workflow say so instead of "unknown backend" or a failed run
// later. It is nil for a usable plugin and for one not installed at all.
func (c *Catalog) Unusable(kind, name string) error {
	p, err := c.Lookup(kind, name)
	if err == nil || p.Path == "" {
		return nil
	}
	return brokenError(api.CodeInvalid, p)
}

func brokenError(code api.Code, p api.Plugin) error {
	return api.Errorf(code, "%s plugin %q (%s) cannot be used: %s", p.Kind, p.Name, p.Path, p.Error)
}

// List returns every plugin found, in directory order, marking shadowed ones.
func (c *Catalog) List() []api.Plugin {
	c.mu.RLock()
	out := make([]api.Plugin, 0, len(c.byPath))
	for _, e := range c.byPath {
		out = append(out, e.Plugin)
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

// Runtime is the directory the plugin processes' socket directories go in.
func (c *Catalog) Runtime() string { return c.runtime }

// Changed is signalled (coalesced) after every check of a binary, for
// tests and listeners that wait for the catalog to see a change.
func (c *Catalog) Changed() <-chan struct{} { return c.changed }

func (c *Catalog) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel of its own signalled (coalesced) like
// Changed, for a part that acts on a changed binary (the supervisor
// replaces its warm spares); cancel ends the subscription.
func (c *Catalog) Subscribe() (changed <-chan struct{}, cancel func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[chan struct{}]bool{}
	}
	c.subs[ch] = true
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
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
	// A folder that does not exist is not made (the daemon makes its
	// home's): the slow rescan finds one made later.
	for _, d := range c.dirs {
		if err := w.Add(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("watch plugins dir", "dir", d, "error", err)
		}
	}
	c.Scan(ctx)
	// Each change is examined on its own goroutine, so one slow binary
	// never holds up the others; all end before Watch returns.
	var checks sync.WaitGroup
	defer checks.Wait()
	// A path whose verified copy failed its check is examined again at once.
	suspectsCtx, stopSuspects := context.WithCancel(ctx)
	suspectsDone := make(chan struct{})
	go func() {
		defer close(suspectsDone)
		for {
			select {
			case <-suspectsCtx.Done():
				return
			case <-c.kick:
			}
			for _, path := range c.takeSuspects() {
				c.check(suspectsCtx, path)
				c.notify()
			}
		}
	}()
	defer func() { stopSuspects(); <-suspectsDone }()
	rescan := time.NewTicker(rescanEvery)
	defer rescan.Stop()
	fswatch.Run(ctx, w, debounce, fswatch.Handler{
		Keep: func(ev fsnotify.Event) bool {
			base := filepath.Base(ev.Name)
			_, _, ok := pluginName(base)
			return ok && !strings.HasSuffix(base, "~") && !strings.HasSuffix(base, ".tmp")
		},
		Settled: func(path string) {
			checks.Go(func() {
				c.check(ctx, path)
				c.notify()
			})
		},
		Error: func(err error) {
			c.log.Warn("plugins watcher", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				c.Scan(ctx)
			}
		},
		Tick:   rescan.C,
		OnTick: func() { c.Scan(ctx) },
	})
	return nil
}

// Command prepares a plugin process executing exe (a verified copy)
// under the name path (its file in a plugins directory, which is what ps
// and the plugin's own messages show): its own process group (so the
// whole tree can be killed), ended if the daemon dies (pluginProcAttr
// says how on each system), stdin closed, a
// short private socket directory, and only the environment it needs:
// Env, then extra (an agent's own `env:`, which wins over the
// daemon's), then the variables the daemon itself sets, which win over
// both. go-plugin adds nothing of the daemon's (pluginclient.ClientConfig sets
// SkipHostEnv), so cmd.Env is the plugin's whole environment.
func Command(exe, path, sockDir, dir string, extra ...string) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Args[0] = path
	cmd.Dir = dir
	cmd.SysProcAttr = pluginProcAttr()
	cmd.Env = append(append(Env(), extra...), "PLUGIN_UNIX_SOCKET_DIR="+sockDir, "TMPDIR="+sockDir)
	return cmd
}

// pluginEnvNames are the daemon's variables every plugin inherits: what a
// process needs to run at all (PATH, HOME, user, locale, time zone), to
// reach the network the way the user does (proxies, CA bundles), to find
// the CLIs' own config (XDG dirs), and the variables the first-party
// backends document that they read. GORACE, which only a binary built
// with the race detector reads, lets a race-built plugin report where its
// daemon's do (the end-to-end tests read both).
var pluginEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true, "REQUESTS_CA_BUNDLE": true,
	"XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "XDG_STATE_HOME": true,
	"GORACE": true,
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

// Env is the part of the daemon's environment plugins inherit. The
// rest (the daemon's own AGENT_WORKER_* settings, tokens, any secret the
// daemon was started with) never reaches a plugin or what its agent runs.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); InEnv(k) {
			env = append(env, kv)
		}
	}
	return env
}

// InEnv says whether the daemon's variable name is passed to plugins.
func InEnv(name string) bool {
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

// Kill stops a plugin client and then its whole process group, so
// nothing it started outlives it. go-plugin's Kill waits until the
// plugin's stdout and stderr close, which never happens while something
// the plugin started still holds them (a script's sleep, a `yes` flood):
// if Kill has not returned after pluginExitGrace the group is killed,
// which closes them, and Kill then reaps the plugin. Only a process that
// left the group can still hold them; then Kill gives up waiting
// after another grace and Kill's goroutine ends when that process does.
func Kill(client *goplugin.Client, cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		client.Kill()
	}()
	grace := time.NewTimer(pluginExitGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	}
	killGroup(cmd)
	grace.Reset(pluginExitGrace)
	select {
	case <-done:
	case <-grace.C:
	}
}

// killGroup sends SIGKILL to the process group of a plugin that was
// started (its pid is its group id: Command sets Setpgid).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
