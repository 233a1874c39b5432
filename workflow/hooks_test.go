package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readHookBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTriggerProvidersParse(t *testing.T) {
	t.Parallel()
	src := triggerAgents + `triggers:
  - webhook: mr
    provider: gitlab
    secret_env: GITLAB_HOOK_SECRET
    events: [merge_request.open, merge_request.update, note]
    message: "@reviewer review ${{ body.object_attributes.url }}"
    report: {to: gitlab, agent: reviewer, token_env: GITLAB_TOKEN, base_url: "https://gitlab.example.com"}
  - {webhook: pr, provider: github, secret_env: GH_HOOK_SECRET, events: [pull_request.opened], message: "@reviewer ${{ body.pull_request.html_url }}"}
report: {to: github, document: review.md, token_env: GITHUB_TOKEN}
`
	f, err := Parse("wf.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Trigger{
		{Name: "mr", Provider: ProviderGitLab, SecretEnv: "GITLAB_HOOK_SECRET", Events: []string{"merge_request.open", "merge_request.update", "note"},
			Message: "@reviewer review ${{ body.object_attributes.url }}", Line: 5,
			Report: &Report{To: ReportGitLab, Agent: "reviewer", TokenEnv: "GITLAB_TOKEN", BaseURL: "https://gitlab.example.com", Line: 10}},
		{Name: "pr", Provider: ProviderGitHub, SecretEnv: "GH_HOOK_SECRET", Events: []string{"pull_request.opened"},
			Message: "@reviewer ${{ body.pull_request.html_url }}", Line: 11},
	}
	if d := cmp.Diff(want, f.Triggers); d != "" {
		t.Errorf("triggers (-want +got):\n%s", d)
	}
	// A trigger without a report of its own takes the workflow's.
	in, err := Resolve(f, Vars{})
	if err != nil {
		t.Fatal(err)
	}
	if r := in.Triggers[1].Report; r == nil || r.To != ReportGitHub || r.Document != "review.md" {
		t.Errorf("the github trigger's report = %+v, want the workflow's", r)
	}
	if r := in.Triggers[0].Report; r == nil || r.To != ReportGitLab {
		t.Errorf("the gitlab trigger's report = %+v, want its own", r)
	}
}

func TestTriggerProviderProblems(t *testing.T) {
	t.Parallel()
	const hook = "{webhook: h, secret_env: S, message: hi, "
	tests := map[string]struct{ triggers, want string }{
		"unknown provider": {"triggers: [" + hook + "provider: gitlb}]\n",
			`wf.yaml:4:63: webhook h: unknown provider "gitlb": did you mean gitlab?`},
		"unknown gitlab event": {"triggers: [" + hook + "provider: gitlab, events: [merge_requst.open]}]\n",
			`wf.yaml:4:80: webhook h: unknown gitlab event "merge_requst.open": did you mean merge_request.open?`},
		"github action on gitlab": {"triggers: [" + hook + "provider: gitlab, events: [merge_request.opened]}]\n",
			`unknown gitlab action "opened" of merge_request: did you mean open?`},
		"unknown github event": {"triggers: [" + hook + "provider: github, events: [pull_requests]}]\n",
			`unknown github event "pull_requests": did you mean pull_request?`},
		"far from any event": {"triggers: [" + hook + "provider: github, events: [zzzzzzzz]}]\n",
			`unknown github event "zzzzzzzz": its events are check_run, check_suite,`},
		"events on hmac": {"triggers: [" + hook + "events: [push]}]\n",
			"webhook h: events: needs provider: github or gitlab"},
		"report to nowhere": {"triggers: [" + hook + "report: {to: gitlap, agent: reviewer, token_env: T}}]\n",
			`webhook h report: unknown to "gitlap": did you mean gitlab?`},
		"report unknown agent": {"triggers: [" + hook + "report: {to: gitlab, agent: reviwer, token_env: T}}]\n",
			`wf.yaml:4:81: webhook h report: unknown agent "reviwer": did you mean reviewer?`},
		"report nothing": {"triggers: [" + hook + "report: {to: gitlab, token_env: T}}]\n",
			"webhook h report needs what to post: agent: NAME (its last message) or document: PATH"},
		"report both": {"triggers: [" + hook + "report: {to: gitlab, agent: reviewer, document: a.md, token_env: T}}]\n",
			"webhook h report names both an agent and a document"},
		"report bad document": {"triggers: [" + hook + "report: {to: gitlab, document: ../secrets.md, token_env: T}}]\n",
			`webhook h report: document "../secrets.md" must be a clean path inside the team's documents folder`},
		"report no token": {"triggers: [" + hook + "report: {to: github, agent: reviewer}}]\n",
			"webhook h report needs token_env"},
		"report github field on gitlab": {"triggers: [" + hook + "report: {to: gitlab, agent: reviewer, token_env: T, repo: a/b}}]\n",
			"webhook h report: repo is GitHub's"},
		"report bad base_url": {"triggers: [" + hook + "report: {to: gitlab, agent: reviewer, token_env: T, base_url: gitlab.local}}]\n",
			`base_url "gitlab.local" must be an http(s) URL`},
		"workflow report without triggers": {"report: {to: gitlab, agent: reviewer, token_env: T}\n",
			"wf.yaml:4:9: report: posts a result back after a webhook delivery, and this workflow has no triggers"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(triggerAgents+tc.triggers))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEventName(t *testing.T) {
	t.Parallel()
	gitlab, github := readHookBody(t, "gitlab_merge_request_open.json"), readHookBody(t, "github_pull_request_opened.json")
	tests := map[string]struct {
		provider HookProvider
		header   string
		body     []byte
		want     string
	}{
		"gitlab merge request":  {ProviderGitLab, "Merge Request Hook", gitlab, "merge_request.open"},
		"gitlab note":           {ProviderGitLab, "Note Hook", []byte(`{"object_kind":"note","object_attributes":{"note":"hi"}}`), "note"},
		"gitlab confidential":   {ProviderGitLab, "Confidential Note Hook", []byte(`{}`), "confidential_note"},
		"github pull request":   {ProviderGitHub, "pull_request", github, "pull_request.opened"},
		"github push":           {ProviderGitHub, "push", []byte(`{"ref":"refs/heads/main"}`), "push"},
		"body not json":         {ProviderGitHub, "push", []byte(`nope`), "push"},
		"hmac says nothing":     {ProviderHMAC, "pull_request", github, ""},
		"gitlab without header": {ProviderGitLab, "", gitlab, ".open"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := EventName(tc.provider, tc.header, tc.body); got != tc.want {
				t.Errorf("EventName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMatchEvent(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		events []string
		name   string
		want   bool
	}{
		"no filter takes all":     {nil, "push", true},
		"exact action":            {[]string{"merge_request.open"}, "merge_request.open", true},
		"another action":          {[]string{"merge_request.open"}, "merge_request.close", false},
		"kind takes every action": {[]string{"merge_request"}, "merge_request.update", true},
		"another kind":            {[]string{"merge_request", "note"}, "push", false},
		"action without kind":     {[]string{"merge_request.open"}, "merge_request", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := MatchEvent(tc.events, tc.name); got != tc.want {
				t.Errorf("MatchEvent(%v, %q) = %v", tc.events, tc.name, got)
			}
		})
	}
}

func TestReportURL(t *testing.T) {
	t.Parallel()
	gitlab, github := readHookBody(t, "gitlab_merge_request_open.json"), readHookBody(t, "github_pull_request_opened.json")
	tests := map[string]struct {
		r       Report
		body    []byte
		want    string
		missing []string
	}{
		"gitlab from the body": {Report{To: ReportGitLab}, gitlab, "https://gitlab.com/api/v4/projects/1/merge_requests/7/notes", nil},
		"gitlab self-hosted, a project path": {Report{To: ReportGitLab, BaseURL: "https://git.example.com/", Project: "${{ body.project.path_with_namespace }}"},
			gitlab, "https://git.example.com/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/7/notes", nil},
		"github from the body": {Report{To: ReportGitHub}, github, "https://api.github.com/repos/octo-org/hello-world/issues/42/comments", nil},
		"github explicit":      {Report{To: ReportGitHub, BaseURL: "http://127.0.0.1:9", Repo: "a/b", Number: "5"}, []byte(`{}`), "http://127.0.0.1:9/repos/a/b/issues/5/comments", nil},
		"a body without the merge request": {Report{To: ReportGitLab}, []byte(`{"project":{"id":3}}`),
			"https://gitlab.com/api/v4/projects/3/merge_requests//notes", []string{"body.object_attributes.iid"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, missing, err := tc.r.URL(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !cmp.Equal(missing, tc.missing) {
				t.Errorf("URL = %q, missing %v; want %q, %v", got, missing, tc.want, tc.missing)
			}
		})
	}
}
