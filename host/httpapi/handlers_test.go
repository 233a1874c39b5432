package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/workflows"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// Handler tests in process: the whole routing stack of New (origin check,
// bearer token, decoding, error mapping) over fakes of the services it is
// handed, so a change to one handler is checked in milliseconds.

const testToken = "s3cret"

// fakeWorkflows is Workflows as a struct of function fields; a nil field
// answers as a call that should not happen.
type fakeWorkflows struct {
	start  func(api.StartWorkflow) (workflows.Started, error)
	stop   func(store.Scope, bool) error
	resume func(store.Scope) error
}

var _ Workflows = (*fakeWorkflows)(nil)

func (f *fakeWorkflows) Start(_ context.Context, req api.StartWorkflow) (workflows.Started, error) {
	return f.start(req)
}
func (f *fakeWorkflows) Stop(_ context.Context, s store.Scope, cancel bool) error {
	return f.stop(s, cancel)
}
func (f *fakeWorkflows) Pause(context.Context, store.Scope) error {
	return errors.New("unexpected Pause")
}
func (f *fakeWorkflows) Resume(_ context.Context, s store.Scope) error {
	return f.resume(s)
}
func (f *fakeWorkflows) Accept(context.Context, store.Scope) error {
	return errors.New("unexpected Accept")
}
func (f *fakeWorkflows) Progress(context.Context, store.Workflow) (*api.Progress, error) {
	return nil, errors.New("unexpected Progress")
}
func (f *fakeWorkflows) Idle(context.Context, store.Scope) (bool, error) {
	return false, errors.New("unexpected Idle")
}

// fakeScheduler is Scheduler as a struct of function fields.
type fakeScheduler struct {
	resume func(store.AgentKey) error
}

var _ Scheduler = (*fakeScheduler)(nil)

func (f *fakeScheduler) Ask(context.Context, api.Target, string, func(backend.Event)) (api.RunResult, error) {
	return api.RunResult{}, errors.New("unexpected Ask")
}
func (f *fakeScheduler) Resume(_ context.Context, k store.AgentKey) error { return f.resume(k) }
func (f *fakeScheduler) Pause(context.Context, store.AgentKey) error {
	return errors.New("unexpected Pause")
}
func (f *fakeScheduler) CancelAgent(context.Context, store.AgentKey) (string, error) {
	return "", errors.New("unexpected CancelAgent")
}
func (f *fakeScheduler) CancelRun(context.Context, string) error {
	return errors.New("unexpected CancelRun")
}

// testAPI is the HTTP API over fakes; the daemon listens on 127.0.0.1:5099.
func testAPI(wfs *fakeWorkflows, sched *fakeScheduler) http.Handler {
	if wfs == nil {
		wfs = &fakeWorkflows{}
	}
	if sched == nil {
		sched = &fakeScheduler{}
	}
	nowhere := http.NotFoundHandler()
	return New(Deps{Workflows: wfs, Sched: sched, Token: testToken, Log: hclog.NewNullLogger(), MCP: nowhere, Metrics: nowhere,
		Info: func() api.DaemonInfo { return api.DaemonInfo{Host: "127.0.0.1", Port: 5099} },
		Home: "/home/me/.agent-worker"})
}

// request is one request with the daemon's token and a JSON body.
type request struct {
	method, path, body string
	header             map[string]string
}

// do serves req and returns the status and the body as the client reads
// it: an api.Error when the request failed.
func do(t *testing.T, h http.Handler, req request) (int, api.Error, string) {
	t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, "http://127.0.0.1:5099"+req.path, body)
	r.Header.Set("Authorization", "Bearer "+testToken)
	if req.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e api.Error
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: status %d with a body that is no API error: %q", req.method, req.path, w.Code, w.Body)
		}
	}
	return w.Code, e, w.Body.String()
}

// A request body is exactly one JSON object of the documented fields, sent
// as application/json and at most MaxBodyBytes; anything else is refused
// with a status and a message that say what to fix, and the workflow is
// not started.
func TestRequestBodyDecoding(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body        string
		contentType string // "" keeps application/json; "-" sends none
		status      int
		code        api.Code
		message     string
	}{
		"unknown field": {body: `{"path": "/w.yaml", "tags": "x"}`, status: 400, code: api.CodeInvalid,
			message: `unknown field "tags" in request body: remove it (the daemon accepts only documented fields)`},
		"malformed JSON":   {body: `{"path": "/w.yaml",}`, status: 400, code: api.CodeInvalid, message: "malformed JSON in request body: "},
		"cut short":        {body: `{"path": "/w.yaml"`, status: 400, code: api.CodeInvalid, message: "malformed JSON in request body: "},
		"not an object":    {body: `["/w.yaml"]`, status: 400, code: api.CodeInvalid, message: "request body must be a JSON object, not a JSON array"},
		"wrong field type": {body: `{"path": 3}`, status: 400, code: api.CodeInvalid, message: `field "path" must be a string, not a JSON number`},
		"wrong list type":  {body: `{"path": "/w.yaml", "args": "a b"}`, status: 400, code: api.CodeInvalid, message: `field "args" must be an array, not a JSON string`},
		"two objects":      {body: `{"path": "/w.yaml"} {}`, status: 400, code: api.CodeInvalid, message: "request body has data after the JSON object: send exactly one object"},
		"not UTF-8":        {body: "{\"path\": \"/w\xff.yaml\"}", status: 400, code: api.CodeInvalid, message: "UTF-8"},
		"text/plain": {body: `{"path": "/w.yaml"}`, contentType: "text/plain", status: 415, code: api.CodeMediaType,
			message: `request body is "text/plain": send it as JSON with Content-Type: application/json`},
		"form": {body: `path=/w.yaml`, contentType: "application/x-www-form-urlencoded", status: 415, code: api.CodeMediaType,
			message: "send it as JSON with Content-Type: application/json"},
		"no content type": {body: `{"path": "/w.yaml"}`, contentType: "-", status: 415, code: api.CodeMediaType,
			message: "request body has no Content-Type: send it as JSON with Content-Type: application/json"},
		"too large": {body: `{"path": "` + strings.Repeat("a", MaxBodyBytes) + `"}`, status: 413, code: api.CodeTooLarge,
			message: "request body is larger than 1048576 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			started := false
			h := testAPI(&fakeWorkflows{start: func(api.StartWorkflow) (workflows.Started, error) {
				started = true
				return workflows.Started{}, nil
			}}, nil)
			req := request{method: "POST", path: "/workflows", body: tc.body, header: map[string]string{}}
			switch tc.contentType {
			case "":
			case "-":
				req.header["Content-Type"] = ""
			default:
				req.header["Content-Type"] = tc.contentType
			}
			status, e, _ := do(t, h, req)
			if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Errorf("answer %d %s %q, want %d %s containing %q", status, e.Code, e.Message, tc.status, tc.code, tc.message)
			}
			if started {
				t.Error("the workflow was started from a refused request")
			}
		})
	}
}

// An empty body is refused as such, and a good one reaches the service
// with every field, its media type parameters allowed.
func TestRequestBodyEmptyAndGood(t *testing.T) {
	t.Parallel()
	var got api.StartWorkflow
	h := testAPI(&fakeWorkflows{start: func(req api.StartWorkflow) (workflows.Started, error) {
		got = req
		return workflows.Started{Scope: store.Scope{Workflow: "review", Tag: "pr-7"}, StartSeq: 42, DryRun: true}, nil
	}}, nil)
	status, e, _ := do(t, h, request{method: "POST", path: "/workflows", header: map[string]string{"Content-Type": "application/json"}})
	if status != 400 || e.Message != "request body is empty: send a JSON object" {
		t.Errorf("empty body: %d %q", status, e.Message)
	}
	status, _, body := do(t, h, request{method: "POST", path: "/workflows",
		body:   `{"path": "/w/review.yaml", "tag": "pr-7", "args": ["7"], "dry_run": true}`,
		header: map[string]string{"Content-Type": "application/json; charset=utf-8"}})
	if status != http.StatusCreated {
		t.Fatalf("good request: %d %s", status, body)
	}
	if got.Path != "/w/review.yaml" || got.Tag != "pr-7" || len(got.Args) != 1 || got.Args[0] != "7" || !got.DryRun {
		t.Errorf("the service got %+v", got)
	}
	var wf api.Workflow
	if err := json.Unmarshal([]byte(body), &wf); err != nil {
		t.Fatal(err)
	}
	if wf.Target != "@review:pr-7" || wf.StartSeq != 42 {
		t.Errorf("answer = %+v, want @review:pr-7 at seq 42", wf)
	}
}

// Each error code of a service is answered with its HTTP status and the
// service's own message; an error without a code is a 500 whose details
// stay in the daemon's log, and so is a panic.
func TestErrorCodesMapToStatuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err     error
		status  int
		code    api.Code
		message string
	}{
		"invalid":     {api.Errorf(api.CodeInvalid, "tag %q is not a tag", "a b"), 400, api.CodeInvalid, `tag "a b" is not a tag`},
		"not found":   {api.Errorf(api.CodeNotFound, "no workflow @wf:main"), 404, api.CodeNotFound, "no workflow @wf:main"},
		"conflict":    {api.Errorf(api.CodeConflict, "@wf:main is stopping"), 409, api.CodeConflict, "@wf:main is stopping"},
		"permission":  {api.Errorf(api.CodePermission, "not yours"), 403, api.CodePermission, "not yours"},
		"too large":   {api.Errorf(api.CodeTooLarge, "too big"), 413, api.CodeTooLarge, "too big"},
		"unavailable": {api.Errorf(api.CodeUnavailable, "the store is unreachable: retry"), 503, api.CodeUnavailable, "the store is unreachable: retry"},
		"wrapped":     {fmt.Errorf("stop: %w", api.Errorf(api.CodeNotFound, "no workflow @wf:main")), 404, api.CodeNotFound, "no workflow @wf:main"},
		"no code":     {errors.New("disk I/O error at /var/secret/db"), 500, api.CodeInternal, "internal error in the daemon: see its log for details"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := testAPI(&fakeWorkflows{stop: func(store.Scope, bool) error { return tc.err }}, nil)
			status, e, body := do(t, h, request{method: "DELETE", path: "/workflows/wf/main"})
			if status != tc.status || e.Code != tc.code || e.Message != tc.message {
				t.Errorf("answer %d %s %q, want %d %s %q", status, e.Code, e.Message, tc.status, tc.code, tc.message)
			}
			if strings.Contains(body, "/var/secret") {
				t.Errorf("an internal error's details reached the client: %s", body)
			}
		})
	}
	t.Run("panic", func(t *testing.T) {
		t.Parallel()
		h := testAPI(&fakeWorkflows{stop: func(store.Scope, bool) error { panic("nil map") }}, nil)
		status, e, _ := do(t, h, request{method: "DELETE", path: "/workflows/wf/main"})
		if status != 500 || e.Code != api.CodeInternal {
			t.Errorf("a panicking handler answered %d %s %q", status, e.Code, e.Message)
		}
	})
}

// A route reads its target from the path: a good one reaches the service
// as a scope, a bad one is refused before the service hears of it, and an
// unknown route says where to look.
func TestRoutesReadTheirTargets(t *testing.T) {
	t.Parallel()
	var stopped []string
	var resumed []store.AgentKey
	h := testAPI(&fakeWorkflows{stop: func(s store.Scope, cancel bool) error {
		stopped = append(stopped, fmt.Sprintf("%s cancel=%v", s, cancel))
		return nil
	}}, &fakeScheduler{resume: func(k store.AgentKey) error {
		resumed = append(resumed, k)
		return nil
	}})
	status, _, body := do(t, h, request{method: "DELETE", path: "/workflows/review/pr-7?cancel=true"})
	if status != 200 || !strings.Contains(body, `"target":"@review:pr-7"`) {
		t.Errorf("stop: %d %s", status, body)
	}
	status, _, body = do(t, h, request{method: "POST", path: "/agents/alice@review:pr-7/resume"})
	if status != 200 || !strings.Contains(body, `"status":"resumed"`) {
		t.Errorf("resume: %d %s", status, body)
	}
	if len(stopped) != 1 || stopped[0] != "@review:pr-7 cancel=true" {
		t.Errorf("stopped %q", stopped)
	}
	if len(resumed) != 1 || resumed[0] != (store.AgentKey{Name: "alice", Workflow: "review", Tag: "pr-7"}) {
		t.Errorf("resumed %+v", resumed)
	}
	status, e, _ := do(t, h, request{method: "POST", path: "/agents/al%20ice/resume"})
	if status != 400 || e.Code != api.CodeInvalid || len(resumed) != 1 {
		t.Errorf("a bad agent name: %d %s %q, %d resumed", status, e.Code, e.Message, len(resumed))
	}
	status, e, _ = do(t, h, request{method: "GET", path: "/nowhere"})
	if status != 404 || e.Message != "no route GET /nowhere: see `agent-worker --help` for what the daemon serves" {
		t.Errorf("unknown route: %d %q", status, e.Message)
	}
}

// Every route but /mcp, /hooks and /identity needs the daemon's bearer
// token, and no route answers a web page of another site.
func TestAuthTokenAndOrigin(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		path   string
		header map[string]string
		status int
		code   api.Code
	}{
		"token":                {"/workflows/wf/main", nil, 200, ""},
		"no token":             {"/workflows/wf/main", map[string]string{"Authorization": ""}, 401, api.CodeUnauthorized},
		"wrong token":          {"/workflows/wf/main", map[string]string{"Authorization": "Bearer s3cre"}, 401, api.CodeUnauthorized},
		"token without Bearer": {"/workflows/wf/main", map[string]string{"Authorization": testToken}, 401, api.CodeUnauthorized},
		"basic auth":           {"/workflows/wf/main", map[string]string{"Authorization": "Basic czNjcmV0"}, 401, api.CodeUnauthorized},
		"own origin":           {"/workflows/wf/main", map[string]string{"Origin": "http://127.0.0.1:5099"}, 200, ""},
		"daemon's address":     {"/workflows/wf/main", map[string]string{"Origin": "http://127.0.0.1:5099", "Host": "localhost:5099"}, 200, ""},
		"other site":           {"/workflows/wf/main", map[string]string{"Origin": "https://evil.example"}, 403, api.CodePermission},
		"other port":           {"/workflows/wf/main", map[string]string{"Origin": "http://127.0.0.1:8080"}, 403, api.CodePermission},
		"null origin":          {"/workflows/wf/main", map[string]string{"Origin": "null"}, 403, api.CodePermission},
		"other site, no token": {"/workflows/wf/main", map[string]string{"Origin": "https://evil.example", "Authorization": ""}, 403, api.CodePermission},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stopped := false
			h := testAPI(&fakeWorkflows{stop: func(store.Scope, bool) error { stopped = true; return nil }}, nil)
			r := httptest.NewRequest("DELETE", "http://127.0.0.1:5099"+tc.path, nil)
			r.Header.Set("Authorization", "Bearer "+testToken)
			for k, v := range tc.header {
				switch {
				case k == "Host":
					r.Host = v
				case v == "":
					r.Header.Del(k)
				default:
					r.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var e api.Error
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != tc.status || e.Code != tc.code {
				t.Errorf("answer %d %s %q, want %d %s", w.Code, e.Code, e.Message, tc.status, tc.code)
			}
			if stopped != (tc.status == 200) {
				t.Errorf("workflow stopped: %v, with answer %d", stopped, w.Code)
			}
			switch tc.code {
			case api.CodeUnauthorized:
				if w.Header().Get("WWW-Authenticate") != `Bearer realm="agent-worker"` ||
					!strings.Contains(e.Message, "missing or wrong bearer token: send `Authorization: Bearer <token>`") {
					t.Errorf("401 without the challenge or the advice: %q, %q", w.Header().Get("WWW-Authenticate"), e.Message)
				}
				if strings.Contains(w.Body.String(), "/home/me") {
					t.Errorf("the 401 tells where the home is: %s", w.Body)
				}
			case api.CodePermission:
				if !strings.Contains(e.Message, "cross-origin request from "+tc.header["Origin"]+" refused") {
					t.Errorf("403 message %q", e.Message)
				}
			}
		})
	}
}

// /identity answers without the token: a daemon that finds its address
// taken asks who listens there.
func TestIdentityNeedsNoToken(t *testing.T) {
	t.Parallel()
	status, _, body := do(t, testAPI(nil, nil), request{method: "GET", path: "/identity", header: map[string]string{"Authorization": ""}})
	if status != 200 || !strings.Contains(body, api.Service) {
		t.Errorf("GET /identity without a token: %d %s", status, body)
	}
}
