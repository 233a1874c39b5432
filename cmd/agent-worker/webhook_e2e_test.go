package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/triggers"
)

// apiServer stands in for GitLab's or GitHub's REST API: it takes a POST
// on one route with one token header and records each, answering the
// status set last.
type apiServer struct {
	srv *httptest.Server
	// mu guards the fields that follow.
	mu     sync.Mutex
	status int
	got    []apiCall
}

// apiCall is one request the API server got.
type apiCall struct {
	method, path, token, accept string
	body                        map[string]string
	answered                    int
}

func newAPIServer(t *testing.T, status int, tokenHeader string) *apiServer {
	s := &apiServer{status: status}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := apiCall{method: r.Method, path: r.URL.Path, token: r.Header.Get(tokenHeader), accept: r.Header.Get("Accept")}
		if err := json.Unmarshal(b, &c.body); err != nil {
			t.Errorf("API server: body %q is not a JSON object of strings: %v", b, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		c.answered = s.status
		s.got = append(s.got, c)
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, `{"id": 1}`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *apiServer) setStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

func (s *apiServer) calls() []apiCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]apiCall(nil), s.got...)
}

// taken are the calls it answered 2xx: the notes it keeps.
func (s *apiServer) taken() []apiCall {
	var out []apiCall
	for _, c := range s.calls() {
		if c.answered/100 == 2 {
			out = append(out, c)
		}
	}
	return out
}

// deliverHook POSTs body to the daemon's webhook path with headers, as
// a sender does: no bearer token.
func (c *cli) deliverHook(path string, body []byte, headers map[string]string) (int, api.HookResult, string) {
	c.t.Helper()
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, d.URL()+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res api.HookResult
	_ = json.Unmarshal(b, &res)
	return resp.StatusCode, res, string(b)
}

func (c *cli) runCount(agent string) int {
	c.t.Helper()
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", agent, "--json")), &l); err != nil {
		c.t.Fatalf("runs --json: %v", err)
	}
	return len(l.Runs)
}

func recordedBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "workflow", "testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A GitLab merge-request webhook (a recorded body, X-Gitlab-Token)
// starts the review team; a wrong token is refused, a replayed delivery
// and an event the trigger does not take start nothing; when the team is
// idle the reviewer's last message is posted as a note of that merge
// request, with the PRIVATE-TOKEN, through the outbox: GitLab down at
// first still gets exactly one note, and `notifications` shows it
// (issue 45, items 1 and 2).
func TestE2EWebhookGitLabReport(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	gitlab := newAPIServer(t, http.StatusServiceUnavailable, "PRIVATE-TOKEN")
	const secret, token = "gl-h00k-secret", "glpat-e2e-t0ken"
	file := filepath.Join(t.TempDir(), "review.yaml")
	writeFile(t, file, `
name: review
agents:
  reviewer:
    backend: mock
    config: {script: [{reply: "LGTM: the viewport fits ({{inbox_summary}})"}, {result: done}]}
triggers:
  - webhook: mr
    provider: gitlab
    secret_env: GL_HOOK_SECRET
    events: [merge_request.open, merge_request.update]
    message: "@reviewer review ${{ body.object_attributes.url }}: ${{ body.object_attributes.title }}"
    report: {to: gitlab, agent: reviewer, token_env: GL_TOKEN, base_url: "`+gitlab.srv.URL+`"}
`)
	c.startDaemon("GL_HOOK_SECRET="+secret, "GL_TOKEN="+token)
	c.ok("start", file, "--background")

	body := recordedBody(t, "gitlab_merge_request_open.json")
	headers := func(tok, uuid string) map[string]string {
		return map[string]string{api.HeaderGitLabToken: tok, api.HeaderGitLabEvent: "Merge Request Hook", api.HeaderGitLabEventUUID: uuid}
	}
	if code, _, out := c.deliverHook("/hooks/review/mr", body, headers("wrong", "uuid-0")); code != http.StatusUnauthorized || !strings.Contains(out, "X-Gitlab-Token does not match") {
		t.Errorf("a wrong token: %d %s", code, out)
	}
	code, res, out := c.deliverHook("/hooks/review/mr", body, headers(secret, "uuid-1"))
	if code != http.StatusAccepted || res.Event != "merge_request.open" || res.Delivery != "uuid-1" || res.Report == "" || res.Duplicate {
		t.Fatalf("the delivery: %d %s", code, out)
	}
	c.waitFor("the review's first attempt, GitLab down", func() bool { return len(gitlab.calls()) >= 1 })

	// A replay of the same delivery is acknowledged and starts nothing.
	if code, res, out := c.deliverHook("/hooks/review/mr", body, headers(secret, "uuid-1")); code != http.StatusOK || !res.Duplicate {
		t.Errorf("the replay: %d %s", code, out)
	}
	// So is an event the trigger does not take.
	closed := bytes.Replace(body, []byte(`"action": "open"`), []byte(`"action": "close"`), 1)
	if code, res, out := c.deliverHook("/hooks/review/mr", closed, headers(secret, "uuid-2")); code != http.StatusOK || res.Event != "merge_request.close" ||
		!strings.Contains(res.Ignored, "not one webhook") {
		t.Errorf("an event not taken: %d %s", code, out)
	}

	c.waitFor("a second attempt while GitLab is down", func() bool { return len(gitlab.calls()) >= 2 })
	gitlab.setStatus(http.StatusCreated)
	c.waitFor("the note taken once GitLab is back", func() bool { return len(gitlab.taken()) == 1 })
	var report api.Notification
	c.waitFor("the report listed delivered", func() bool {
		for _, n := range c.notifications() {
			if n.Event == "report" {
				report = n
			}
		}
		return report.State == "delivered"
	})
	note := gitlab.taken()[0]
	if note.method != http.MethodPost || note.path != "/api/v4/projects/1/merge_requests/7/notes" || note.token != token ||
		!strings.HasPrefix(note.body["body"], "LGTM: the viewport fits") || !strings.Contains(note.body["body"], "MS-Viewport") {
		t.Errorf("the note: %+v", note)
	}
	if report.Workflow != "review" || report.Attempts < 2 || report.URL != gitlab.srv.URL+"/api/v4/projects/1/merge_requests/7/notes" {
		t.Errorf("notifications: %+v", report)
	}
	if out := c.ok("notifications"); !strings.Contains(out, "report") || strings.Contains(out, token) {
		t.Errorf("notifications:\n%s", out)
	}
	// The replay and the ignored event started no second run and posted
	// no second note.
	if n := c.runCount("reviewer@review"); n != 1 {
		t.Errorf("reviewer ran %d times, want once", n)
	}
	for _, n := range c.notifications() {
		if n.Event == "report" && n.ID != report.ID {
			t.Errorf("a second report %+v", n)
		}
	}
	if got := gitlab.taken(); len(got) != 1 {
		t.Errorf("GitLab took %d notes, want 1", len(got))
	}
	if logs, err := os.ReadFile(filepath.Join(c.home, api.LogDir, "daemon.log")); err == nil && (strings.Contains(string(logs), token) || strings.Contains(string(logs), secret)) {
		t.Errorf("the daemon's log holds the token or the secret")
	}
}

// A GitHub pull_request webhook, signed, posts the team's review
// document as a comment of that pull request through GitHub's issues
// route, with the bearer token and GitHub's media type (issue 45).
func TestE2EReportGitHub(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	github := newAPIServer(t, http.StatusCreated, "Authorization")
	const secret, token = "gh-h00k-secret", "ghp_e2eT0ken"
	file := filepath.Join(t.TempDir(), "prs.yaml")
	writeFile(t, file, `
name: prs
agents:
  reviewer:
    backend: mock
    config: {script: [{tool: team_doc_create, args: {file: "review.md", content: "## Review\nShip it."}}, {result: done}]}
triggers:
  - {webhook: pr, provider: github, secret_env: GH_HOOK_SECRET, events: [pull_request.opened], message: "@reviewer review ${{ body.pull_request.html_url }}"}
report: {to: github, document: review.md, token_env: GH_TOKEN, base_url: "`+github.srv.URL+`"}
`)
	c.startDaemon("GH_HOOK_SECRET="+secret, "GH_TOKEN="+token)
	c.ok("start", file, "--background")
	body := recordedBody(t, "github_pull_request_opened.json")
	code, res, out := c.deliverHook("/hooks/prs/pr", body, map[string]string{api.HeaderSignature: triggers.Sign(secret, body),
		api.HeaderGitHubEvent: "pull_request", api.HeaderDelivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958"})
	if code != http.StatusAccepted || res.Event != "pull_request.opened" || res.Report == "" {
		t.Fatalf("the delivery: %d %s", code, out)
	}
	c.waitFor("the comment", func() bool { return len(github.taken()) == 1 })
	got := github.taken()[0]
	if got.path != "/repos/octo-org/hello-world/issues/42/comments" || got.token != "Bearer "+token || got.accept != "application/vnd.github+json" ||
		got.body["body"] != "## Review\nShip it." {
		t.Errorf("the comment: %+v", got)
	}
	if code, _, out := c.deliverHook("/hooks/prs/pr", body, map[string]string{api.HeaderSignature: triggers.Sign("wrong", body),
		api.HeaderGitHubEvent: "pull_request", api.HeaderDelivery: "x"}); code != http.StatusUnauthorized {
		t.Errorf("a wrong signature: %d %s", code, out)
	}
}
