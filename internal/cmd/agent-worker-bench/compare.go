package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The TypeScript system -compare measures: lidessen/moniro at tsCommit,
// its packages/agent-worker (version tsVersion) run from source under bun
// bunVersion from npm. Its lockfile pins just-bash and bash-tool versions
// npm no longer serves; tsOverrides are the nearest that it does.
const (
	tsCommit   = "7b699af"
	tsVersion  = "0.18.0"
	bunVersion = "1.4.5"
)

var tsOverrides = map[string]string{"just-bash": "2.9.5", "bash-tool": "1.3.13"}

//go:embed tsclaude.mjs
var tsClaudeScript []byte

// tsSystem is a checkout of the TypeScript system, ready to run.
type tsSystem struct {
	cfg     config
	dir     string // the checkout (lidessen/moniro)
	pkg     string // its packages/agent-worker
	bun     string
	fakeBin string // holds the stand-in `claude` (tsclaude.mjs)
}

// prepareTS checks cfg.compare is a checkout of the TypeScript system,
// installs its dependencies (npm, with tsOverrides) and bun when they are
// missing, and writes the stand-in claude.
func prepareTS(ctx context.Context, cfg config) (*tsSystem, error) {
	s := &tsSystem{cfg: cfg, dir: cfg.compare, pkg: filepath.Join(cfg.compare, "packages", "agent-worker")}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(s.pkg, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if _, serr := os.Stat(filepath.Join(s.pkg, "src", "cli", "index.ts")); err != nil || serr != nil {
		return nil, fmt.Errorf("%s is not a checkout of lidessen/moniro at %s (no packages/agent-worker/src/cli/index.ts): "+
			"export one with `git --git-dir=<clone>/.git archive %[2]s | tar -x -C %[1]s`", s.dir, tsCommit)
	}
	if pkg.Version != tsVersion {
		return nil, fmt.Errorf("%s: packages/agent-worker is version %q, not %s (moniro at %s)", s.dir, pkg.Version, tsVersion, tsCommit)
	}
	if err := s.install(ctx); err != nil {
		return nil, err
	}
	if s.bun = cfg.bun; s.bun == "" {
		if s.bun, err = installBun(cfg.tsCache); err != nil {
			return nil, err
		}
	}
	if out, err := exec.Command(s.bun, "--version").Output(); err != nil {
		return nil, fmt.Errorf("%s --version: %w", s.bun, err)
	} else if v := strings.TrimSpace(string(out)); v != bunVersion {
		step("TypeScript system: bun is %s, not %s", v, bunVersion)
	}
	s.fakeBin = filepath.Join(cfg.work, "ts-bin")
	if err := os.MkdirAll(s.fakeBin, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.fakeBin, "claude"), tsClaudeScript, 0o755); err != nil {
		return nil, err
	}
	return s, nil
}

// install runs npm install in the checkout (a workspace root) with
// tsOverrides, unless its dependencies are already there.
func (s *tsSystem) install(ctx context.Context) error {
	have := func(name string) string {
		for _, dir := range []string{s.dir, s.pkg} {
			var p struct{ Version string }
			if b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json")); err == nil && json.Unmarshal(b, &p) == nil {
				return p.Version
			}
		}
		return ""
	}
	if have("just-bash") == tsOverrides["just-bash"] && have("bash-tool") == tsOverrides["bash-tool"] && have("hono") != "" {
		return nil
	}
	step("TypeScript system: npm install in %s (overrides %v)", s.dir, tsOverrides)
	set := []string{"pkg", "set"}
	for name, v := range tsOverrides {
		set = append(set, "overrides."+name+"="+v)
	}
	for _, args := range [][]string{set, {"install", "--no-audit", "--no-fund", "--loglevel=error"}} {
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = s.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm %s in %s: %v: %s", args[0], s.dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// installBun installs bun bunVersion from npm into dir/bun unless it is
// there, and returns its path.
func installBun(dir string) (string, error) {
	prefix := filepath.Join(dir, "bun")
	bun := filepath.Join(prefix, "node_modules", ".bin", "bun")
	if out, err := exec.Command(bun, "--version").Output(); err == nil && strings.TrimSpace(string(out)) == bunVersion {
		return bun, nil
	}
	step("TypeScript system: npm install bun@%s into %s", bunVersion, prefix)
	if out, err := exec.Command("npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error",
		"bun@"+bunVersion).CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install bun@%s: %v: %s", bunVersion, err, strings.TrimSpace(string(out)))
	}
	return bun, nil
}

// describe says what was measured, for the table's heading.
func (s *tsSystem) describe() string {
	return fmt.Sprintf("lidessen/moniro at %s, `packages/agent-worker` %s from source under bun %s (just-bash %s, bash-tool %s), each row on a fresh daemon and home",
		tsCommit, tsVersion, bunVersion, tsOverrides["just-bash"], tsOverrides["bash-tool"])
}

// cli runs the TypeScript system's CLI with args in home and returns its
// output.
func (s *tsSystem) cli(ctx context.Context, home string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.bun, append([]string{"src/cli/index.ts"}, args...)...)
	cmd.Dir = s.pkg
	cmd.Env = s.env(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("agent-worker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// env is the environment of the TypeScript system's processes: its home
// (it keeps everything under ~/.agent-worker) and the stand-in claude
// first on PATH.
func (s *tsSystem) env(home string, extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PATH=")
	})
	return append(append(env, "HOME="+home, "PATH="+s.fakeBin+string(os.PathListSeparator)+os.Getenv("PATH")), extra...)
}

// tsDaemon is the TypeScript system's daemon, started for one scenario in
// a fresh home.
type tsDaemon struct {
	home, url, token string
	pid              int
	exited           chan error
	http             *http.Client
}

// startDaemon runs `agent-worker daemon --port 0` in a fresh home named
// name and waits until it answers /health.
func (s *tsSystem) startDaemon(ctx context.Context, name string, extraEnv ...string) (*tsDaemon, error) {
	home, err := tempHome(s.cfg, "ts-"+name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.bun, "src/cli/index.ts", "daemon", "--port", "0")
	cmd.Dir = s.pkg
	cmd.Env = s.env(home, extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start TypeScript daemon: %w", err)
	}
	d := &tsDaemon{home: home, pid: cmd.Process.Pid, exited: make(chan error, 1), http: &http.Client{Timeout: time.Minute}}
	go func() { d.exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info struct {
			PID   int    `json:"pid"`
			Host  string `json:"host"`
			Port  int    `json:"port"`
			Token string `json:"token"`
		}
		if b, err := os.ReadFile(filepath.Join(home, ".agent-worker", "daemon.json")); err == nil &&
			json.Unmarshal(b, &info) == nil && info.PID == d.pid && info.Port != 0 {
			d.url, d.token = fmt.Sprintf("http://%s:%d", info.Host, info.Port), info.Token
			if d.do(ctx, "GET", "/health", nil, nil) == nil {
				return d, nil
			}
		}
		select {
		case err := <-d.exited:
			return nil, fmt.Errorf("TypeScript daemon exited at start: %v: %s", err, strings.TrimSpace(stderr.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			syscall.Kill(-d.pid, syscall.SIGKILL)
			return nil, errors.New("TypeScript daemon did not answer /health within 30 s")
		}
	}
}

// do sends one request to the daemon's API with its bearer token.
func (d *tsDaemon) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// stop asks the daemon to shut down and kills its process group after 10 s.
func (d *tsDaemon) stop(ctx context.Context) {
	_ = d.do(ctx, "POST", "/shutdown", nil, nil)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-d.pid, syscall.SIGKILL)
		<-d.exited
	}
	syscall.Kill(-d.pid, syscall.SIGKILL) // its agents' processes, if any are left
}

// tsWorkflow is a workflow running in the TypeScript daemon: its channel
// file and its own MCP server (the one whose channel_send wakes its agents).
type tsWorkflow struct {
	channel *tsChannel
	mcpURL  string
	status  string // _state/agent-status.json
}

// startWorkflow starts a workflow of agents (name → definition, as its
// parser makes them) through POST /workflows, with its context where the
// CLI would put it, and finds its MCP server's address in its channel.
func (d *tsDaemon) startWorkflow(ctx context.Context, name string, agents map[string]map[string]any, kickoff string) (*tsWorkflow, error) {
	dir := filepath.Join(d.home, ".agent-worker", "workflows", name, "main")
	wf := map[string]any{"name": name, "filePath": filepath.Join(d.home, name+".yaml"), "sourceDir": d.home,
		"agents": agents, "setup": []any{}, "context": map[string]any{"provider": "file", "dir": dir}}
	if kickoff != "" {
		wf["kickoff"] = kickoff
	}
	if err := d.do(ctx, "POST", "/workflows", map[string]any{"workflow": wf, "tag": "main"}, nil); err != nil {
		return nil, err
	}
	w := &tsWorkflow{channel: &tsChannel{file: filepath.Join(dir, "channel.jsonl")}, status: filepath.Join(dir, "_state", "agent-status.json")}
	e, err := w.channel.next(func(e tsEntry) bool { return strings.HasPrefix(e.Content, "MCP server: ") }, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: its MCP server: %w", name, err)
	}
	w.mcpURL = strings.TrimPrefix(e.Content, "MCP server: ")
	return w, nil
}

// waitIdle waits until agent's loop is idle again, so that the next
// mention wakes it: a mention while its loop is not waiting wakes nothing
// and waits for the loop's 5 s poll. After a run the loop writes "idle"
// to its status file twice (after the ack, then once more when it goes
// back to waiting; only then does a wake reach it), so this waits for the
// second write, or 20 ms after the first when the two share a timestamp.
func (w *tsWorkflow) waitIdle(agent string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var first string
	var firstAt time.Time
	for time.Now().Before(deadline) {
		var st map[string]struct {
			State      string
			LastUpdate string
		}
		if b, err := os.ReadFile(w.status); err == nil && json.Unmarshal(b, &st) == nil && st[agent].State == "idle" {
			switch at := st[agent].LastUpdate; {
			case first == "":
				first, firstAt = at, time.Now()
			case at != first || time.Since(firstAt) > 20*time.Millisecond:
				return nil
			}
		}
		time.Sleep(time.Millisecond) // another process's file: polled
	}
	return fmt.Errorf("%s not idle within %s", agent, limit)
}

// tsEntry is one line of the TypeScript system's channel.jsonl.
type tsEntry struct {
	From    string `json:"from"`
	Content string `json:"content"`
	Kind    string `json:"kind"` // "" for an agent's or user's message
}

// tsChannel reads a channel.jsonl as it grows.
type tsChannel struct {
	file string
	off  int64
	buf  []tsEntry // read, not yet returned
}

// read appends the complete lines written since the last read.
func (c *tsChannel) read() error {
	f, err := os.Open(c.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(c.off, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // io.EOF: an incomplete line is read again next time
			return nil
		}
		c.off += int64(len(line))
		var e tsEntry
		if json.Unmarshal(line, &e) == nil {
			c.buf = append(c.buf, e)
		}
	}
}

// next returns the first entry from now on that matches, reading the file
// every millisecond (the TypeScript system has no event stream for it).
func (c *tsChannel) next(match func(tsEntry) bool, limit time.Duration) (tsEntry, error) {
	deadline := time.Now().Add(limit)
	for {
		for len(c.buf) > 0 {
			e := c.buf[0]
			c.buf = c.buf[1:]
			if match(e) {
				return e, nil
			}
		}
		if time.Now().After(deadline) {
			return tsEntry{}, fmt.Errorf("no matching line in %s within %s", c.file, limit)
		}
		time.Sleep(time.Millisecond)
		if err := c.read(); err != nil {
			return tsEntry{}, err
		}
	}
}

// count reads what is new and returns how many entries so far match (the
// entries are consumed).
func (c *tsChannel) count(match func(tsEntry) bool) (int, error) {
	if err := c.read(); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range c.buf {
		if match(e) {
			n++
		}
	}
	c.buf = c.buf[:0]
	return n, nil
}

// fromAgent matches an agent's own message (not a log line) from one of
// names.
func fromAgent(names ...string) func(tsEntry) bool {
	return func(e tsEntry) bool { return e.Kind == "" && slices.Contains(names, e.From) }
}

// channelSend loads the daemon's MCP endpoint with 8 clients of kind (go or
// typescript) as agents s0..s7, standalone agents of its global workflow.
func (s *tsSystem) channelSend(ctx context.Context, kind, script string, calls int, args []map[string]any) (load, error) {
	d, err := s.startDaemon(ctx, "mcp-"+kind)
	if err != nil {
		return load{}, err
	}
	defer d.stop(ctx)
	urls, tokens, err := d.outsideAgents(ctx, len(args))
	if err != nil {
		return load{}, err
	}
	if kind == "go" {
		return goLoadSpread(ctx, urls, tokens, calls, "channel_send", []int{d.pid}, func(i int) map[string]any { return args[i] })
	}
	return tsLoad(ctx, script, urls, tokens, calls, "channel_send", args, d.pid)
}

// outsideAgents registers s0..s(n-1) as standalone agents (their loops
// never run) and returns each one's MCP address and the bearer token.
func (d *tsDaemon) outsideAgents(ctx context.Context, n int) (urls, tokens []string, err error) {
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		if err := d.do(ctx, "POST", "/agents", map[string]any{"name": name, "model": "mock", "system": "outside agent", "backend": "mock"}, nil); err != nil {
			return nil, nil, err
		}
		urls, tokens = append(urls, d.url+"/mcp?agent="+name), append(tokens, d.token)
	}
	return urls, tokens, nil
}

// tsReplier is mention → reply on the TypeScript system: a workflow of one
// mock agent, echo, and an MCP session as user on the workflow's server.
type tsReplier struct {
	w       *tsWorkflow
	session *mcp.ClientSession
	rounds  int
}

// newReplier starts the workflow "mr" of one mock agent, echo, in d and
// opens an MCP session as user on its server.
func (d *tsDaemon) newReplier(ctx context.Context) (*tsReplier, error) {
	w, err := d.startWorkflow(ctx, "mr", map[string]map[string]any{"echo": {"backend": "mock"}}, "")
	if err != nil {
		return nil, err
	}
	sess, err := goSession(ctx, w.mcpURL+"?agent=user", "")
	if err != nil {
		return nil, fmt.Errorf("MCP session on %s: %w", w.mcpURL, err)
	}
	return &tsReplier{w: w, session: sess}, nil
}

// round mentions echo through channel_send and returns the time until its
// reply is in the channel; it returns once echo's loop is idle again.
func (r *tsReplier) round(ctx context.Context) (time.Duration, error) {
	r.rounds++
	t0 := time.Now()
	res, err := r.session.CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": fmt.Sprintf("@echo ping %d", r.rounds)}})
	if err == nil && res.IsError {
		err = fmt.Errorf("channel_send: %v", res.Content)
	}
	if err != nil {
		return 0, err
	}
	if _, err := r.w.channel.next(fromAgent("echo"), 30*time.Second); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	return el, r.w.waitIdle("echo", 30*time.Second)
}

// mentionReply is mention → reply on a fresh TypeScript daemon: count
// rounds after 5 warm-ups.
func (s *tsSystem) mentionReply(ctx context.Context, count int) (p50, p99 time.Duration, err error) {
	d, err := s.startDaemon(ctx, "mention")
	if err != nil {
		return 0, 0, err
	}
	defer d.stop(ctx)
	r, err := d.newReplier(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer r.session.Close()
	lat := make([]time.Duration, 0, count)
	for i := range count + 5 {
		el, err := r.round(ctx)
		if err != nil {
			return 0, 0, err
		}
		if i >= 5 {
			lat = append(lat, el)
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

// cliSendReply is `agent-worker send` → reply seen on a fresh TypeScript
// daemon running a workflow of one mock agent: count samples after one
// warm-up.
func (s *tsSystem) cliSendReply(ctx context.Context, count int) (p50, p99 time.Duration, err error) {
	d, err := s.startDaemon(ctx, "clisend")
	if err != nil {
		return 0, 0, err
	}
	defer d.stop(ctx)
	w, err := d.startWorkflow(ctx, "cs", map[string]map[string]any{"echo": {"backend": "mock"}}, "")
	if err != nil {
		return 0, 0, err
	}
	lat := make([]time.Duration, 0, count)
	for i := range count + 1 {
		t0 := time.Now()
		if _, err := s.cli(ctx, d.home, "send", "echo@cs", fmt.Sprintf("@echo ping %d", i)); err != nil {
			return 0, 0, err
		}
		if _, err := w.channel.next(fromAgent("echo"), 30*time.Second); err != nil {
			return 0, 0, err
		}
		if i >= 1 {
			lat = append(lat, time.Since(t0))
		}
		if err := w.waitIdle("echo", 30*time.Second); err != nil {
			return 0, 0, err
		}
	}
	p50, p99 = percentiles(lat)
	return p50, p99, nil
}

// pingPong runs the ping-pong workflow of agents agents (agent i mentions
// agent i+1) on a fresh TypeScript daemon, its agents claude agents whose
// claude is the stand-in, and returns the agents' messages per second over
// window after a warm-up.
func (s *tsSystem) pingPong(ctx context.Context, name string, agents int, window time.Duration) (float64, error) {
	next := map[string]string{}
	defs := map[string]map[string]any{}
	var names, kickoff []string
	for i := range agents {
		a := fmt.Sprintf("%s%d", name, i)
		next[a] = fmt.Sprintf("%s%d", name, (i+1)%agents)
		defs[a] = map[string]any{"backend": "claude"}
		names = append(names, a)
		if agents > 2 || i == 0 {
			kickoff = append(kickoff, "@"+a)
		}
	}
	m, _ := json.Marshal(next)
	d, err := s.startDaemon(ctx, name, "AW_BENCH_NEXT="+string(m))
	if err != nil {
		return 0, err
	}
	defer d.stop(ctx)
	// The kickoff is posted, not sent through MCP: nothing wakes the
	// first agents but their loops' poll (5 s), inside the warm-up.
	w, err := d.startWorkflow(ctx, name, defs, strings.Join(kickoff, " ")+" go")
	if err != nil {
		return 0, err
	}
	for range warmMessages(agents) {
		if _, err := w.channel.next(fromAgent(names...), 60*time.Second); err != nil {
			return 0, fmt.Errorf("%s warm-up: %w", name, err)
		}
	}
	if _, err := w.channel.count(fromAgent(names...)); err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(window) // the fixed measurement window
	n, err := w.channel.count(fromAgent(names...))
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// runWorkflow times the TypeScript system's `agent-worker run` of the
// n-agent mock workflow (the same file as ours) in a fresh home, the best
// of tries.
func (s *tsSystem) runWorkflow(ctx context.Context, n, tries int) (time.Duration, error) {
	file, err := teamFile(filepath.Join(s.cfg.work, fmt.Sprintf("ts-wf%d", n)), n)
	if err != nil {
		return 0, err
	}
	home, err := tempHome(s.cfg, fmt.Sprintf("ts-run%d", n))
	if err != nil {
		return 0, err
	}
	best := time.Duration(0)
	for i := range tries {
		t0 := time.Now()
		if _, err := s.cli(ctx, home, "run", file, "--tag", fmt.Sprintf("r%d", i)); err != nil {
			return 0, err
		}
		if el := time.Since(t0); best == 0 || el < best {
			best = el
		}
	}
	return best, nil
}

// rss is the TypeScript daemon's VmRSS idle, after calls channel_send calls
// (8 go-sdk clients) and after runs mention → reply runs, as the table's
// cell.
func (s *tsSystem) rss(ctx context.Context, calls, runs int) (string, error) {
	d, err := s.startDaemon(ctx, "rss")
	if err != nil {
		return "", err
	}
	defer d.stop(ctx)
	idle, err := rss(d.pid)
	if err != nil {
		return "", err
	}
	urls, tokens, err := d.outsideAgents(ctx, 8)
	if err != nil {
		return "", err
	}
	if _, err := goLoadSpread(ctx, urls, tokens, calls, "channel_send", nil, func(i int) map[string]any {
		return map[string]any{"message": fmt.Sprintf("@s%d ping", (i+1)%len(tokens))}
	}); err != nil {
		return "", err
	}
	afterCalls, _ := rss(d.pid)
	r, err := d.newReplier(ctx)
	if err != nil {
		return "", err
	}
	defer r.session.Close()
	for range runs {
		if _, err := r.round(ctx); err != nil {
			return "", err
		}
	}
	afterRuns, _ := rss(d.pid)
	return fmt.Sprintf("%s / %s / %s (its mock runs inside it)", mib(idle), mib(afterCalls), mib(afterRuns)), nil
}
