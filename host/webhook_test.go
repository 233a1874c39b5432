package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/triggers"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// testEnv is a daemon's environment for secrets, changeable while it runs
// (t.Setenv cannot be used by parallel tests).
type testEnv struct {
	mu   sync.Mutex
	vars map[string]string
}

func (e *testEnv) lookup(k string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.vars[k]
	return v, ok
}

func (e *testEnv) unset(k string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.vars, k)
}

const hooksYAML = `name: hooks
params: [{name: repo, default: acme/app}]
agents:
  reviewer:
    backend: mock
triggers:
  - webhook: pr-opened
    secret_env: HOOK_SECRET
    message: "@reviewer PR ${{ body.pull_request.number }} in ${{ params.repo }} (${{ workflow.name }}:${{ workflow.tag }}): ${{ body.pull_request.html_url }}${{ body.pull_request.nope }}"
`

// hookCall is one webhook delivery as a sender makes it: no bearer token.
type hookCall struct {
	path, body, signature, delivery, requestID string
}

func (th *testHost) hook(t testing.TB, c hookCall) (int, api.HookResult, api.Error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, th.url(c.path), strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range map[string]string{api.HeaderSignature: c.signature, api.HeaderDelivery: c.delivery, api.HeaderRequestID: c.requestID} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res api.HookResult
	var e api.Error
	_ = json.Unmarshal(b, &res)
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, res, e
}

// channel is the whole channel of @hooks:main.
func channel(t testing.TB, th *testHost) []api.Message {
	t.Helper()
	ms, err := th.client().Peek(context.Background(), "@hooks:main", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestWebhookTrigger(t *testing.T) {
	t.Parallel()
	env := &testEnv{vars: map[string]string{"HOOK_SECRET": "s3cret"}}
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.LookupEnv = env.lookup })
	file := filepath.Join(t.TempDir(), "hooks.yaml")
	saveFile(t, file, hooksYAML)
	if _, err := th.client().StartWorkflow(context.Background(), api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	const body = `{"action": "opened", "pull_request": {"number": 7, "html_url": "https://github.com/acme/app/pull/7"}}`
	good := triggers.Sign("s3cret", []byte(body))
	const path = "/hooks/hooks/pr-opened"

	refused := map[string]struct {
		call   hookCall
		status int
		says   string
	}{
		"missing signature": {hookCall{path: path, body: body}, 401, "missing X-Hub-Signature-256"},
		"wrong secret":      {hookCall{path: path, body: body, signature: triggers.Sign("guess", []byte(body))}, 401, "does not match the body"},
		"body changed":      {hookCall{path: path, body: body + " ", signature: good}, 401, "does not match the body"},
		"not sha256=":       {hookCall{path: path, body: body, signature: strings.TrimPrefix(good, "sha256=")}, 401, "must be sha256="},
		"bearer instead":    {hookCall{path: path, body: body, signature: "Bearer " + th.Token()}, 401, "must be sha256="},
		"unknown workflow":  {hookCall{path: "/hooks/nope/pr-opened", body: body, signature: good}, 404, `no such webhook`},
		"unknown tag":       {hookCall{path: path + "?tag=other", body: body, signature: good}, 404, `no such webhook`},
		"unknown trigger":   {hookCall{path: "/hooks/hooks/push", body: body, signature: good}, 404, `no such webhook`},
		"not json":          {hookCall{path: path, body: "payload=x", signature: triggers.Sign("s3cret", []byte("payload=x"))}, 400, "the request body is not JSON"},
	}
	big := strings.Repeat("x", 1<<20+1)
	refused["over 1 MiB"] = struct {
		call   hookCall
		status int
		says   string
	}{hookCall{path: path, body: big, signature: triggers.Sign("s3cret", []byte(big))}, 413, "larger than 1048576 bytes"}
	for name, tc := range refused {
		status, _, e := th.hook(t, tc.call)
		if status != tc.status || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %d %+v, want %d saying %q", name, status, e, tc.status, tc.says)
		}
		// An unauthenticated caller learns no workflow or webhook name.
		if status == 404 && (strings.Contains(e.Message, "pr-opened") || strings.Contains(e.Message, "hooks")) {
			t.Errorf("%s: the 404 names what exists: %q", name, e.Message)
		}
	}
	if ms := channel(t, th); len(ms) != 0 {
		t.Fatalf("refused deliveries posted: %+v", ms)
	}

	// A signed delivery posts the message as system and wakes the agent
	// it mentions, which answers.
	status, res, e := th.hook(t, hookCall{path: path, body: body, signature: good, delivery: "d-1"})
	if status != http.StatusAccepted || res.Duplicate || res.Seq == 0 {
		t.Fatalf("signed delivery: %d %+v %+v", status, res, e)
	}
	if len(res.Missing) != 1 || res.Missing[0] != "body.pull_request.nope" {
		t.Errorf("missing paths = %q", res.Missing)
	}
	const want = "@reviewer PR 7 in acme/app (hooks:main): https://github.com/acme/app/pull/7"
	var reply api.Message
	testkit.WaitFor(t, "the reviewer's reply", func() bool {
		for _, m := range channel(t, th) {
			if m.From == "reviewer" {
				reply = m
				return true
			}
		}
		return false
	})
	ms := channel(t, th)
	if ms[0].From != "system" || ms[0].Content != want || ms[0].Seq != res.Seq || len(ms[0].Mentions) != 1 || ms[0].Mentions[0] != "reviewer" {
		t.Errorf("posted message = %+v, want %q from system mentioning reviewer", ms[0], want)
	}
	if !strings.Contains(reply.Content, "PR 7 in acme/app") {
		t.Errorf("reply = %q, want it to answer the webhook's message", reply.Content)
	}

	// The same delivery again, by either header, is accepted and posts nothing.
	status, again, _ := th.hook(t, hookCall{path: path, body: body, signature: good, delivery: "d-1"})
	if status != http.StatusOK || !again.Duplicate || again.Seq != res.Seq {
		t.Errorf("repeated delivery: %d %+v, want 200 duplicate of seq %d", status, again, res.Seq)
	}
	status, byReq, _ := th.hook(t, hookCall{path: path, body: body, signature: good, requestID: "r-1"})
	status2, byReq2, _ := th.hook(t, hookCall{path: path, body: body, signature: good, requestID: "r-1"})
	if status != http.StatusAccepted || status2 != http.StatusOK || !byReq2.Duplicate || byReq2.Seq != byReq.Seq {
		t.Errorf("X-Request-Id deliveries: %d %+v then %d %+v", status, byReq, status2, byReq2)
	}
	// Deliveries post as system; the agents' replies come and go meanwhile.
	systemLines := func() int {
		n := 0
		for _, m := range channel(t, th) {
			if m.From == "system" {
				n++
			}
		}
		return n
	}
	if posted := systemLines(); posted != 2 {
		t.Errorf("%d messages posted by four deliveries of two ids, want 2", posted)
	}

	// The secret gone from the daemon's environment: no delivery is taken,
	// however it is signed.
	env.unset("HOOK_SECRET")
	before := systemLines()
	status, _, e = th.hook(t, hookCall{path: path, body: body, signature: good, delivery: "d-2"})
	if status != http.StatusServiceUnavailable || !strings.Contains(e.Message, "lacks its secret") {
		t.Errorf("delivery without a secret: %d %+v, want 503", status, e)
	}
	status, _, _ = th.hook(t, hookCall{path: path, body: body, delivery: "d-3"})
	if status != http.StatusServiceUnavailable {
		t.Errorf("unsigned delivery without a secret: %d, want 503", status)
	}
	if after := systemLines(); after != before {
		t.Errorf("deliveries without a secret posted %d messages", after-before)
	}
}

// A trigger whose secret_env is unset is refused when the workflow starts
// and when an edit adds it, at its file:line; nothing starts, and the last
// good config keeps running.
func TestWebhookSecretUnsetRefusedAtLoad(t *testing.T) {
	t.Parallel()
	env := &testEnv{vars: map[string]string{}}
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.LookupEnv = env.lookup })
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "hooks.yaml")
	saveFile(t, file, hooksYAML)
	_, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file})
	want := file + ":7: webhook pr-opened: secret_env HOOK_SECRET is not set in the daemon's environment"
	if err == nil || !strings.Contains(err.Error(), want) || api.ErrorCode(err) != api.CodeInvalid {
		t.Fatalf("start error = %v, want %q", err, want)
	}
	if _, err := th.client().GetWorkflow(ctx, api.Target{Workflow: "hooks", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("the refused workflow exists: %v", err)
	}

	// Started without the trigger, then edited to add it.
	noHooks := hooksYAML[:strings.Index(hooksYAML, "triggers:")]
	saveFile(t, file, noHooks)
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	saveFile(t, file, hooksYAML)
	target := api.Target{Workflow: "hooks", Tag: "main"}
	w := waitWorkflow(t, th, target, "the rejected edit", func(w api.Workflow, _ []api.Agent) bool { return w.Error != "" })
	if !strings.Contains(w.Error, "last good config") || !strings.Contains(w.Error, want) {
		t.Errorf("reload error = %q, want %q", w.Error, want)
	}
	body := []byte(`{"pull_request": {"number": 1}}`)
	status, _, _ := th.hook(t, hookCall{path: "/hooks/hooks/pr-opened", body: string(body), signature: triggers.Sign("", body)})
	if status != http.StatusNotFound {
		t.Errorf("a rejected trigger answered %d, want 404", status)
	}
	if len(channel(t, th)) != 0 {
		t.Errorf("something was posted")
	}
}
