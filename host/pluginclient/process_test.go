package pluginclient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// modeEnv makes the test binary a plugin (CONVENTIONS.md item 6): the
// tests below start os.Args[0] with it set, as the daemon starts a plugin
// binary.
const modeEnv = "AGENT_WORKER_PLUGIN_TEST_MODE"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(modeEnv); mode {
	case "":
		os.Exit(m.Run())
	case "backend":
		plugin.Serve(processBackend)
	case "garbage":
		fmt.Println("hello from a plugin that prints before Serve")
		plugin.Serve(processBackend)
	case "docs":
		plugin.Serve(plugin.Config{Info: plugin.Info{Name: "memdocs"}, Docs: &oneDoc{}})
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", modeEnv, mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// processBackend behaves by the agent's name, so one binary covers every
// case.
var processBackend = plugin.Config{
	Info: plugin.Info{Name: "proctest", Version: "0.0.1", Capabilities: []string{"resume"}},
	Backend: backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		hclog.L().Info("run started", "run", req.RunID)
		switch req.Agent.Name {
		case "crash":
			if err := ev.Send(backend.Event{Kind: backend.EventHeartbeat}); err != nil {
				return err
			}
			os.Exit(3)
		case "fail":
			return backend.Permanent(sdk.Errorf(sdk.ErrInvalid, "model %q is unknown", req.Agent.Model))
		case "big":
			return ev.Send(backend.Event{Kind: backend.EventResult, Text: fmt.Sprint(len(req.Agent.Config))})
		case "env":
			wd, _ := os.Getwd()
			return ev.Send(backend.Event{Kind: backend.EventResult, Text: strings.Join(append(os.Environ(), "cwd="+wd), "\n")})
		}
		if err := ev.Send(backend.Event{Kind: backend.EventText, Text: "thinking"}); err != nil {
			return err
		}
		return ev.Send(backend.Event{Kind: backend.EventResult, Text: "hello from " + req.Agent.Name})
	}),
}

// oneDoc is a docs provider with one document; enough to see calls cross.
type oneDoc struct {
	mu      sync.Mutex
	content string
}

func (p *oneDoc) Read(context.Context, docprovider.Ref) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.content == "" {
		return "", sdk.Errorf(sdk.ErrNotFound, "document notes.md does not exist")
	}
	return p.content, nil
}

func (p *oneDoc) Write(_ context.Context, _ docprovider.Ref, content string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.content = content
	return nil
}

func (p *oneDoc) Append(ctx context.Context, r docprovider.Ref, content string) error {
	return errors.New("not used")
}

func (p *oneDoc) Create(ctx context.Context, r docprovider.Ref, content string) error {
	return errors.New("not used")
}

func (p *oneDoc) List(context.Context, docprovider.Scope) ([]docprovider.Info, error) {
	return []docprovider.Info{}, nil
}

// start runs the test binary as a plugin in mode, the way the daemon
// does, and returns the client and its logs.
func start(t *testing.T, mode string) (*goplugin.Client, *testkit.Buffer) {
	t.Helper()
	logs := &testkit.Buffer{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Debug})
	cmd := exec.Command(os.Args[0])
	// The race detector sleeps a second before a process exits; the
	// plugin's exit is not what these tests measure.
	cmd.Env = []string{modeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	c := goplugin.NewClient(pluginclient.ClientConfig(cmd, logger))
	t.Cleanup(c.Kill)
	return c, logs
}

func connect(t *testing.T, c *goplugin.Client) goplugin.ClientProtocol {
	t.Helper()
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("start plugin: %v", err)
	}
	return rpc
}

// backendProcess starts a backend plugin process and dispenses it.
func backendProcess(t *testing.T) backend.Backend {
	t.Helper()
	c, _ := start(t, "backend")
	b, err := pluginclient.DispenseBackend(connect(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A run's env and project directory come with its request (a warm spare
// was started without them): the process sets the agent's variables over
// its own and moves to the project directory before the backend runs.
func TestProcessRunTakesItsEnvAndDir(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var result string
	sink := backend.EventsFunc(func(e backend.Event) error { result = e.Text; return nil })
	req := backend.Request{RunID: "run-1", Agent: backend.Agent{Name: "env"}, ProjectDir: dir,
		Env: map[string]string{"AW_AGENT_SETTING": "from-the-agent", "GORACE": "overridden"}}
	if err := backendProcess(t).Run(runCtx(t), req, sink); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(result, "\n")
	for _, want := range []string{"AW_AGENT_SETTING=from-the-agent", "GORACE=overridden", "cwd=" + dir} {
		if !slices.Contains(lines, want) {
			t.Errorf("the run's process lacks %s:\n%s", want, result)
		}
	}
	if slices.Contains(lines, "GORACE=atexit_sleep_ms=0") {
		t.Errorf("the agent's value did not replace the process's own:\n%s", result)
	}
}

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A real plugin process: fingerprint, runs, errors, logs.
func TestProcessBackend(t *testing.T) {
	t.Parallel()
	c, logs := start(t, "backend")
	rpc := connect(t, c)
	if v := c.NegotiatedVersion(); v != plugin.ProtocolVersion {
		t.Errorf("NegotiatedVersion = %d, want %d", v, plugin.ProtocolVersion)
	}
	info, err := pluginclient.DispenseInfo(rpc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := info.GetInfo(runCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := plugin.Info{Name: "proctest", Kind: plugin.KindBackend, Version: "0.0.1", APIVersions: []string{"v1"}, Capabilities: []string{"resume", plugin.CapabilityRunEnv, plugin.CapabilitySandbox}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetInfo (-want +got):\n%s", diff)
	}

	b, err := pluginclient.DispenseBackend(rpc)
	if err != nil {
		t.Fatal(err)
	}
	var events []backend.Event
	sink := backend.EventsFunc(func(e backend.Event) error { events = append(events, e); return nil })
	req := backend.Request{RunID: "run-7", Attempt: 1, Agent: backend.Agent{Name: "alice", Model: "m"}}
	if err := b.Run(runCtx(t), req, sink); err != nil {
		t.Fatalf("Run = %v", err)
	}
	wantEvents := []backend.Event{{Kind: backend.EventText, Text: "thinking"}, {Kind: backend.EventResult, Text: "hello from alice"}}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// The process served its run: another one is refused, whatever it is.
	err = b.Run(runCtx(t), backend.Request{RunID: "run-8", Agent: backend.Agent{Name: "bob"}}, sink)
	if !errors.Is(err, sdk.ErrConflict) || !backend.IsPermanent(err) || !strings.Contains(err.Error(), "served its run already (run run-8 refused)") {
		t.Errorf("second Run in one process = %v (class %v, permanent %v), want a refusal", err, sdk.Class(err), backend.IsPermanent(err))
	}

	// Each of the next runs gets a process of its own, as the daemon's do.
	b = backendProcess(t)
	req.Agent = backend.Agent{Name: "fail", Model: "gpt-9"}
	err = b.Run(runCtx(t), req, sink)
	if !errors.Is(err, sdk.ErrInvalid) || !backend.IsPermanent(err) || err.Error() != `model "gpt-9" is unknown` {
		t.Errorf("Run of a failing agent = %v (class %v, permanent %v)", err, sdk.Class(err), backend.IsPermanent(err))
	}

	// Requests past gRPC's 4 MiB default reach the plugin.
	events = nil
	b = backendProcess(t)
	req.Agent = backend.Agent{Name: "big", Config: []byte(`"` + strings.Repeat("x", 5<<20) + `"`)}
	if err := b.Run(runCtx(t), req, sink); err != nil {
		t.Fatalf("Run with a 5 MiB config = %v", err)
	}
	if len(events) != 1 || events[0].Text != fmt.Sprint(len(req.Agent.Config)) {
		t.Errorf("events of the big run = %v", events)
	}

	// The plugin's hclog output comes out of the daemon's logger.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "run started") {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's log line never reached the host logger; logs:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond) // polling a log with a deadline; there is no event to wait on
	}
}

// A plugin that dies mid-run gives a retryable sdk.ErrUnavailable at once,
// never a hang.
func TestProcessCrashIsUnavailable(t *testing.T) {
	t.Parallel()
	c, _ := start(t, "backend")
	b, err := pluginclient.DispenseBackend(connect(t, c))
	if err != nil {
		t.Fatal(err)
	}
	ctx := runCtx(t)
	err = b.Run(ctx, backend.Request{RunID: "r", Agent: backend.Agent{Name: "crash"}}, backend.EventsFunc(func(backend.Event) error { return nil }))
	if ctx.Err() != nil {
		t.Fatalf("Run hung until the test's deadline: %v", err)
	}
	if !errors.Is(err, sdk.ErrUnavailable) || backend.IsPermanent(err) {
		t.Errorf("Run of a crashing plugin = %v (class %v, permanent %v), want retryable sdk.ErrUnavailable", err, sdk.Class(err), backend.IsPermanent(err))
	}
}

// A docs provider process answers, and once it is gone calls fail with
// sdk.ErrUnavailable (the daemon restarts it) instead of hanging.
func TestProcessDocs(t *testing.T) {
	t.Parallel()
	c, _ := start(t, "docs")
	rpc := connect(t, c)
	info, err := pluginclient.DispenseInfo(rpc)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := info.GetInfo(runCtx(t)); err != nil || got.Kind != plugin.KindDocs {
		t.Errorf("GetInfo = %+v, %v; want kind docs", got, err)
	}
	p, err := pluginclient.DispenseDocs(rpc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := runCtx(t)
	r := docprovider.Ref{Workflow: "w", Tag: "t", Path: "notes.md"}
	if _, err := p.Read(ctx, r); !errors.Is(err, sdk.ErrNotFound) || err.Error() != "document notes.md does not exist" {
		t.Errorf("Read before Write = %v, want the plugin's not-found error", err)
	}
	if err := p.Write(ctx, r, "hi"); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Read(ctx, r); err != nil || got != "hi" {
		t.Errorf("Read = %q, %v", got, err)
	}
	c.Kill()
	if _, err := p.Read(ctx, r); !errors.Is(err, sdk.ErrUnavailable) {
		t.Errorf("Read after the plugin exited = %v, want sdk.ErrUnavailable", err)
	}
	if ctx.Err() != nil {
		t.Error("Read after the plugin exited hung until the deadline")
	}
}

// A plugin that prints to stdout before Serve breaks the handshake; the
// daemon must get a clear error quickly, not wait for a timeout.
func TestProcessStdoutGarbage(t *testing.T) {
	t.Parallel()
	c, _ := start(t, "garbage")
	began := time.Now()
	_, err := c.Client()
	if err == nil {
		t.Fatal("Client = nil error, want the handshake to fail")
	}
	for _, want := range []string{"Unrecognized remote plugin message", "hello from a plugin that prints before Serve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took := time.Since(began); took >= pluginclient.StartTimeout {
		t.Errorf("the handshake failure took %v, as long as the start timeout", took)
	}
}

// A user who runs a plugin by hand is told what it is, with exit status 1.
func TestProcessRunByHand(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeEnv+"=backend")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("running by hand: %v, want exit status 1", err)
	}
	if len(out) != 0 {
		t.Errorf("stdout = %q, want nothing", out)
	}
	for _, want := range []string{"agent-worker backend plugin (proctest 0.0.1)", "not meant to be run by hand", "plugins.d"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}

// Ping answers for a live plugin process and fails within its deadline for
// a stopped one, which is how the daemon tells a quiet run from a dead one.
func TestPingStoppedProcess(t *testing.T) {
	t.Parallel()
	c, _ := start(t, "backend")
	rpc := connect(t, c)
	if err := pluginclient.Ping(runCtx(t), rpc); err != nil {
		t.Fatalf("Ping of a live plugin = %v", err)
	}
	pid := c.ReattachConfig().Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	waitStopped(t, pid)
	ctx, cancel := context.WithTimeout(runCtx(t), 300*time.Millisecond)
	defer cancel()
	if err := pluginclient.Ping(ctx, rpc); err == nil {
		t.Fatal("Ping of a stopped plugin succeeded")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := pluginclient.Ping(runCtx(t), rpc); err != nil {
		t.Errorf("Ping after SIGCONT = %v", err)
	}
}

// waitStopped waits until every thread of pid is stopped: kill(SIGSTOP)
// returns before a thread running on another core has stopped, and such a
// thread could still answer.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(stats) > 0
		for _, f := range stats {
			b, err := os.ReadFile(f)
			// The state follows the ")" that ends the command name.
			if i := bytes.LastIndexByte(b, ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				stopped = false
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d did not stop after SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A plugin's environment is the command's, not the host's: go-plugin would
// otherwise add the whole host environment, secrets included.
func TestProcessGetsOnlyTheCommandEnvironment(t *testing.T) {
	t.Setenv("AW_HOST_CANARY", "host-secret-7f3a")
	c, _ := start(t, "backend")
	b, err := pluginclient.DispenseBackend(connect(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var env string
	sink := backend.EventsFunc(func(e backend.Event) error {
		if e.Kind == backend.EventResult {
			env = e.Text
		}
		return nil
	})
	if err := b.Run(runCtx(t), backend.Request{RunID: "run-env", Agent: backend.Agent{Name: "env"}}, sink); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env, modeEnv+"=backend") {
		t.Fatalf("the plugin's environment lacks the command's own variable:\n%s", env)
	}
	if strings.Contains(env, "host-secret-7f3a") {
		t.Errorf("the host's environment reached the plugin:\n%s", env)
	}
}

// A plugin process started with a key serves a run only with that key
// (issue 26): a confined run can reach a warm spare's socket, since
// Landlock does not filter unix sockets by path, but cannot hand it a run
// of its own making. A stranger's refused request does not spend the
// process, and the key never reaches the plugin's environment.
func TestProcessKeyGuardsTheRun(t *testing.T) {
	logs := &testkit.Buffer{}
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{modeEnv + "=backend", "GORACE=atexit_sleep_ms=0", backend.EnvProcessKey + "=k-5e1f"}
	c := goplugin.NewClient(pluginclient.ClientConfig(cmd, hclog.New(&hclog.LoggerOptions{Output: logs})))
	t.Cleanup(c.Kill)
	b, err := pluginclient.DispenseBackend(connect(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var env string
	sink := backend.EventsFunc(func(e backend.Event) error {
		if e.Kind == backend.EventResult {
			env = e.Text
		}
		return nil
	})
	for name, key := range map[string]string{"no key": "", "a wrong key": "k-0000"} {
		err := b.Run(runCtx(t), backend.Request{RunID: "run-stranger", Agent: backend.Agent{Name: "env"}, ProcessKey: key}, sink)
		if !errors.Is(err, sdk.ErrPermission) || !strings.Contains(err.Error(), "does not carry the key") {
			t.Errorf("a run with %s = %v; want it refused as not carrying the key", name, err)
		}
	}
	if err := b.Run(runCtx(t), backend.Request{RunID: "run-daemon", Agent: backend.Agent{Name: "env"}, ProcessKey: "k-5e1f"}, sink); err != nil {
		t.Fatalf("the run with the key: %v", err)
	}
	if strings.Contains(env, "k-5e1f") || strings.Contains(env, backend.EnvProcessKey) {
		t.Errorf("the key is in the plugin's environment:\n%s", env)
	}
}
