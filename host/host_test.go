package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/httpapi"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// testHost is a daemon running in the test process on a free port.
type testHost struct {
	*Host
	home   string
	cancel context.CancelFunc
	done   chan error

	waitOnce, stopOnce sync.Once
	runErr             error
}

// startHost starts a daemon on home with the mock backend installed, as
// every backend an agent is created with must be.
func startHost(t testing.TB, home string) *testHost {
	t.Helper()
	return startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: []string{installed(t, "mock")}})
}

// startHostWithSDK is startHost with the sdk backend installed too.
func startHostWithSDK(t testing.TB, home string) *testHost {
	t.Helper()
	return startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: []string{installed(t, "mock", "sdk")}})
}

// installed is a new plugins folder with the named first-party backends.
func installed(t testing.TB, backends ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range backends {
		name := "agent-worker-backend-" + b
		testkit.Install(t, testkit.Build(t, "cmd/"+name), dir, name)
	}
	return dir
}

func startHostWith(t testing.TB, cfg Config) *testHost {
	t.Helper()
	home := cfg.Home
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHost{Host: h, home: home, cancel: cancel, done: make(chan error, 1)}
	go func() { th.done <- h.Run(ctx) }()
	// Run publishes daemon.json before serving; wait for it instead of sleeping.
	c := th.client()
	for i := 0; ; i++ {
		if _, err := c.Health(context.Background()); err == nil {
			break
		} else if i == 200 {
			t.Fatalf("daemon never became healthy: %v", err)
		}
	}
	t.Cleanup(func() { th.stop(t) })
	return th
}

// wait returns what Run returned, once it has.
func (th *testHost) wait() error {
	th.waitOnce.Do(func() { th.runErr = <-th.done })
	return th.runErr
}

// stop ends Run and releases the host; safe to call twice.
func (th *testHost) stop(t testing.TB) {
	t.Helper()
	th.stopOnce.Do(func() {
		th.cancel()
		if err := th.wait(); err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := th.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func (th *testHost) client() *api.Client { return api.NewClient(th.Info()) }

func (th *testHost) url(path string) string { return th.Info().URL() + path }

// call sends a raw request with the daemon's token unless auth is given,
// a body as JSON.
func (th *testHost) call(t testing.TB, method, path, body string, auth ...string) (int, api.Error, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, th.url(path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(auth) > 0 {
		if auth[0] != "" {
			req.Header.Set("Authorization", auth[0])
		}
	} else {
		req.Header.Set("Authorization", "Bearer "+th.Token())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.Error
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e, b
}

func TestEveryRouteNeedsTheToken(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	routes := []struct{ method, path string }{
		{"GET", "/health"}, {"POST", "/shutdown"}, {"GET", "/agents"}, {"POST", "/agents"},
		{"GET", "/agents/alice"}, {"DELETE", "/agents/alice"}, {"GET", "/workflows"},
		{"GET", "/workflows/global/main"}, {"DELETE", "/workflows/x/main"}, {"GET", "/metrics"}, {"GET", "/no-such-route"},
		{"GET", "/docs/global/main"}, {"GET", "/proposals/global/main"}, {"GET", "/resources/global/main/res_0123456789abcdef"},
		{"POST", "/console/codes"}, {"GET", "/tasks"}, {"POST", "/tasks"}, {"GET", "/tasks/task-1"},
		{"GET", "/worktrees"}, {"POST", "/worktrees/alice@wf/integrate"}, {"POST", "/worktrees/alice@wf/discard"},
		{"GET", "/debug/pprof/"}, {"GET", "/debug/pprof/heap"},
	}
	auths := map[string]string{
		"no header":    "",
		"wrong token":  "Bearer " + strings.Repeat("0", 64),
		"token scheme": "Token " + th.Token(),
		"bare token":   th.Token(),
		"empty bearer": "Bearer ",
		"prefix only":  "Bearer " + th.Token()[:10],
	}
	for _, r := range routes {
		for name, auth := range auths {
			status, e, _ := th.call(t, r.method, r.path, `{"name":"x","backend":"mock"}`, auth)
			if status != http.StatusUnauthorized || e.Code != api.CodeUnauthorized || !strings.Contains(e.Message, "daemon.json") {
				t.Errorf("%s %s with %s: status %d, body %+v; want 401 unauthorized naming daemon.json", r.method, r.path, name, status, e)
			}
			if strings.Contains(e.Message, th.home) {
				t.Errorf("%s %s with %s: the 401 shows the daemon's home: %q", r.method, r.path, name, e.Message)
			}
		}
	}
	// The shutdown attempts above were refused: the daemon still answers.
	if _, err := th.client().Health(context.Background()); err != nil {
		t.Fatalf("daemon stopped by an unauthenticated request: %v", err)
	}
}

func TestDaemonFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th := startHost(t, home)
	path := filepath.Join(home, api.DaemonFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("daemon.json mode = %v, want 0600", st.Mode().Perm())
	}
	d, err := api.ReadDaemonInfo(home)
	if err != nil {
		t.Fatal(err)
	}
	if d.PID != os.Getpid() || d.Port != th.Addr().Port || d.Host != "127.0.0.1" || len(d.Token) != 64 || d.StartedAt.IsZero() {
		t.Errorf("daemon.json = %+v; want our pid, port %d, host, 64-hex token, start time", d, th.Addr().Port)
	}
	th.stop(t)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json still there after stop: %v", err)
	}
}

func TestSecondDaemonOnSameHomeRefused(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	startHost(t, home)
	_, err := New(Config{Home: home, Listen: "127.0.0.1:0"})
	if err == nil {
		t.Fatal("second New on the same home succeeded")
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the running daemon (%s)", err, want)
	}
	if api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("code = %q, want conflict", api.ErrorCode(err))
	}
}

func TestStaleDaemonFileReplaced(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	stale := api.DaemonInfo{PID: 1 << 22, Host: "127.0.0.1", Port: 1, Token: "old"}
	if err := api.WriteDaemonInfo(home, stale); err != nil {
		t.Fatal(err)
	}
	th := startHost(t, home)
	d, err := api.ReadDaemonInfo(home)
	if err != nil {
		t.Fatal(err)
	}
	if d.Token == "old" || d.PID != os.Getpid() || d.Port != th.Addr().Port {
		t.Errorf("stale daemon.json was not replaced: %+v", d)
	}
}

func TestShutdownRoute(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th := startHost(t, home)
	if err := th.client().Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := th.wait(); err != nil {
		t.Fatalf("Run after shutdown: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json still there after POST /shutdown: %v", err)
	}
}

func TestAgentRequestErrors(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	if status, _, b := th.call(t, "POST", "/agents", `{"name":"alice","backend":"mock"}`); status != http.StatusCreated {
		t.Fatalf("create alice: %d %s", status, b)
	}
	tests := map[string]struct {
		method, path, body string
		status             int
		code               api.Code
		says               string
	}{
		"malformed JSON":   {"POST", "/agents", `{"name":`, 400, api.CodeInvalid, "malformed JSON"},
		"not an object":    {"POST", "/agents", `["alice"]`, 400, api.CodeInvalid, "request body must be a JSON object, not a JSON array"},
		"send not object":  {"POST", "/send", `"hi"`, 400, api.CodeInvalid, "request body must be a JSON object, not a JSON string"},
		"send wrong type":  {"POST", "/send", `{"target":"alice","message":["hi"]}`, 400, api.CodeInvalid, `field "message" must be a string, not a JSON array`},
		"send NUL":         {"POST", "/send", `{"target":"alice","message":"a\u0000b"}`, 400, api.CodeInvalid, "NUL byte"},
		"bool field":       {"PUT", "/docs/global/main/x.md", `{"content":"a","create":"yes"}`, 400, api.CodeInvalid, `field "create" must be true or false, not a JSON string`},
		"doc missing":      {"GET", "/docs/global/main/nope.md", ``, 404, api.CodeNotFound, "nope.md"},
		"doc escapes":      {"GET", "/docs/global/main/a%2F..%2F..%2Fsecret.md", ``, 400, api.CodeInvalid, ".."},
		"system NUL":       {"POST", "/agents", `{"name":"bob","backend":"mock","system":"x\u0000y"}`, 400, api.CodeInvalid, "NUL byte"},
		"empty body":       {"POST", "/agents", ``, 400, api.CodeInvalid, "empty"},
		"trailing data":    {"POST", "/agents", `{"name":"zed","backend":"mock"} {}`, 400, api.CodeInvalid, "exactly one"},
		"unknown field":    {"POST", "/agents", `{"name":"bob","backend":"mock","modle":"x"}`, 400, api.CodeInvalid, `unknown field "modle"`},
		"wrong type":       {"POST", "/agents", `{"name":7}`, 400, api.CodeInvalid, `"name" must be a string`},
		"invalid name":     {"POST", "/agents", `{"name":"9lives","backend":"mock"}`, 400, api.CodeInvalid, "use a letter"},
		"reserved name":    {"POST", "/agents", `{"name":"all","backend":"mock"}`, 400, api.CodeInvalid, "reserved"},
		"bad workflow":     {"POST", "/agents", `{"name":"bob","backend":"mock","workflow":"a b"}`, 400, api.CodeInvalid, "workflow name"},
		"unknown backend":  {"POST", "/agents", `{"name":"bob","backend":"gpt"}`, 400, api.CodeInvalid, "use one of"},
		"bad schedule":     {"POST", "/agents", `{"name":"bob","backend":"mock","schedule":"every day"}`, 400, api.CodeInvalid, "cron"},
		"bad cron":         {"POST", "/agents", `{"name":"bob","backend":"mock","schedule":"99 * * * *"}`, 400, api.CodeInvalid, `minute field "99" is out of range`},
		"tiny interval":    {"POST", "/agents", `{"name":"bob","backend":"mock","schedule":"1ms"}`, 400, api.CodeInvalid, "at least"},
		"prompt no sched":  {"POST", "/agents", `{"name":"bob","backend":"mock","wakeup_prompt":"hi"}`, 400, api.CodeInvalid, "needs a schedule"},
		"config not obj":   {"POST", "/agents", `{"name":"bob","backend":"mock","config":[1]}`, 400, api.CodeInvalid, "JSON object"},
		"config bad env":   {"POST", "/agents", `{"name":"bob","backend":"mock","config":{"env":{"A":1}}}`, 400, api.CodeInvalid, "config env: want an object of strings"},
		"config bad time":  {"POST", "/agents", `{"name":"bob","backend":"mock","config":{"timeout":"soon"}}`, 400, api.CodeInvalid, `config timeout: "soon" is not a duration`},
		"duplicate":        {"POST", "/agents", `{"name":"alice","backend":"mock"}`, 409, api.CodeConflict, "already exists"},
		"too large":        {"POST", "/agents", `{"name":"bob","backend":"mock","system":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`, 413, api.CodeTooLarge, "larger than"},
		"unknown agent":    {"GET", "/agents/nobody", ``, 404, api.CodeNotFound, "not found"},
		"delete unknown":   {"DELETE", "/agents/nobody@wf:t", ``, 404, api.CodeNotFound, "not found"},
		"bad target":       {"GET", "/agents/a@b@c", ``, 400, api.CodeInvalid, "more than one '@'"},
		"scope as agent":   {"GET", "/agents/@review", ``, 400, api.CodeInvalid, "needs an agent"},
		"unknown workflow": {"GET", "/workflows/nope/main", ``, 404, api.CodeNotFound, "not found"},
		"stop global":      {"DELETE", "/workflows/global/main", ``, 400, api.CodeInvalid, "cannot be stopped"},
		"unknown route":    {"GET", "/nope", ``, 404, api.CodeNotFound, "no route"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, e, b := th.call(t, tc.method, tc.path, tc.body)
			if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Errorf("%s %s: got %d %s; want %d %s saying %q", tc.method, tc.path, status, b, tc.status, tc.code, tc.says)
			}
			if strings.Contains(e.Message, "api.Error") || strings.Contains(e.Message, "api.Code") || strings.Contains(e.Message, "Go value") {
				t.Errorf("%s %s: error %q shows a Go type", tc.method, tc.path, e.Message)
			}
		})
	}
	// None of the refused requests left anything behind.
	agents, err := th.client().ListAgents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 || agents[0].Name != "alice" {
		t.Errorf("agents after refused requests = %+v, want only alice", agents)
	}
}

func TestInternalErrorsHideDetails(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	th.DB().Close() // every query now fails inside the store
	status, e, _ := th.call(t, "GET", "/agents", "")
	if status != 500 || e.Code != api.CodeInternal || strings.Contains(e.Message, "sql") || strings.Contains(e.Message, "pool") {
		t.Errorf("GET /agents on a closed store: %d %+v; want 500 internal without internals", status, e)
	}
}

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	post := func(name string) int {
		body, _ := json.Marshal(api.AgentSpec{Name: name, Backend: "mock"})
		req, _ := http.NewRequest("POST", th.url("/agents"), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+th.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	statuses := make([]int, 200)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(2)
		go func() { defer wg.Done(); statuses[i] = post(fmt.Sprintf("agent%03d", i)) }()
		go func() { defer wg.Done(); statuses[100+i] = post("same") }()
	}
	wg.Wait()
	created, conflicts := 0, 0
	for i, s := range statuses {
		switch {
		case i < 100 && s != http.StatusCreated:
			t.Errorf("distinct agent%03d: status %d, want 201", i, s)
		case i >= 100 && s == http.StatusCreated:
			created++
		case i >= 100 && s == http.StatusConflict:
			conflicts++
		case i >= 100:
			t.Errorf("same-name create: status %d, want 201 or 409", s)
		}
	}
	if created != 1 || conflicts != 99 {
		t.Errorf("same-name creates: %d created, %d conflicts; want 1 and 99", created, conflicts)
	}
	agents, err := th.client().ListAgents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 101 {
		t.Errorf("%d agents listed, want 101", len(agents))
	}
}

func TestAgentsSurviveRestart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th := startHostWithSDK(t, home)
	ctx := context.Background()
	specs := []api.AgentSpec{
		{Name: "alice", Backend: "mock", System: "be brief"},
		{Name: "bob", Backend: "sdk", Model: "anthropic/claude-sonnet-4-5", Workflow: "review", Tag: "pr-1",
			Schedule: "*/15 * * * *", WakeupPrompt: "check the queue", Config: backend.AgentConfig{MaxSteps: 5, Timeout: 90 * time.Second, Env: map[string]string{"HTTPS_PROXY": "http://p:3128"},
				Extra: map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`)}}},
	}
	var before []api.Agent
	for _, s := range specs {
		a, err := th.client().CreateAgent(ctx, s)
		if err != nil {
			t.Fatalf("create %s: %v", s.Name, err)
		}
		before = append(before, a)
	}
	th.stop(t)

	th2 := startHostWithSDK(t, home)
	after, err := th2.client().ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("agents after restart (-before +after):\n%s", diff)
	}
	wf, err := th2.client().GetWorkflow(ctx, api.Target{Workflow: "review", Tag: "pr-1"})
	if err != nil || !cmp.Equal(wf.Agents, []string{"bob"}) {
		t.Errorf("workflow review:pr-1 after restart = %+v, %v; want member bob", wf, err)
	}
}

func TestHealthReportsState(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	ctx := context.Background()
	for _, n := range []string{"alice", "bob"} {
		if _, err := th.client().CreateAgent(ctx, api.AgentSpec{Name: n, Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := th.DB().SetAgentState(ctx, store.AgentKey{Name: "bob", Workflow: "global", Tag: "main"}, "failed", "model said no"); err != nil {
		t.Fatal(err)
	}
	h, err := th.client().Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.PID != os.Getpid() || h.Counts.Agents != 2 || h.Counts.Workflows != 1 || len(h.Agents) != 2 {
		t.Errorf("health = %+v; want our pid, 2 agents, 1 workflow", h)
	}
	if want := []string{"agent bob failed: model said no"}; !cmp.Equal(h.Problems, want) {
		t.Errorf("problems = %q, want %q", h.Problems, want)
	}
}

// A failure the store names reaches the CLI with its code intact: the HTTP
// status, the exit code the CLI uses, errors.Is on the client's error and
// the store's own message.
func TestStoreErrorsReachTheClient(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	c, ctx := th.client(), context.Background()
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "alice", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		method, path, body string
		call               func() error
		status             int
		is                 error
		exit               int
		says               string
	}{
		"not found": {"GET", "/agents/nobody", "", func() error {
			_, err := c.GetAgent(ctx, api.Target{Agent: "nobody", Workflow: "global", Tag: "main"})
			return err
		}, http.StatusNotFound, api.ErrNotFound, api.ExitNotFound, `agent "nobody@global:main" not found`},
		"conflict": {"POST", "/agents", `{"name":"alice","backend":"mock"}`, func() error {
			_, err := c.CreateAgent(ctx, api.AgentSpec{Name: "alice", Backend: "mock"})
			return err
		}, http.StatusConflict, api.ErrConflict, api.ExitConflict, `agent "alice@global:main" already exists`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if status, e, b := th.call(t, tc.method, tc.path, tc.body); status != tc.status || !strings.HasPrefix(e.Message, tc.says) {
				t.Errorf("%s %s: %d %s; want %d saying %q", tc.method, tc.path, status, b, tc.status, tc.says)
			}
			err := tc.call()
			var ae *api.Error
			if !errors.As(err, &ae) || !errors.Is(err, tc.is) || api.ExitCode(api.ErrorCode(err)) != tc.exit || !strings.HasPrefix(ae.Message, tc.says) {
				t.Errorf("client error = %v (code %s, exit %d); want %v, exit %d, saying %q", err, api.ErrorCode(err), api.ExitCode(api.ErrorCode(err)), tc.is, tc.exit, tc.says)
			}
		})
	}
}

// The daemon's profiles are served to the token's holder (go tool pprof).
func TestPprofBehindTheToken(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	status, _, body := th.call(t, "GET", "/debug/pprof/heap?debug=1", "", "Bearer "+th.Token())
	if status != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("GET /debug/pprof/heap with the token: %d %.80q", status, body)
	}
}
