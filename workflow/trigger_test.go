package workflow

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const triggerAgents = "name: wf\nagents: {reviewer: {backend: mock}}\nparams: [{name: repo, default: acme/app}]\n"

func TestTriggersParse(t *testing.T) {
	t.Parallel()
	src := triggerAgents + `triggers:
  - webhook: pr-opened
    secret_env: PR_WEBHOOK_SECRET
    message: "@reviewer new PR in ${{ params.repo }}: ${{ body.pull_request.html_url }}"
  - {webhook: push, secret_env: PUSH_SECRET, message: "@reviewer ${{ body.commits.0.id }}"}
`
	f, err := Parse("wf.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Trigger{
		{Name: "pr-opened", SecretEnv: "PR_WEBHOOK_SECRET", Message: "@reviewer new PR in ${{ params.repo }}: ${{ body.pull_request.html_url }}", Provider: ProviderHMAC, Line: 5},
		{Name: "push", SecretEnv: "PUSH_SECRET", Message: "@reviewer ${{ body.commits.0.id }}", Provider: ProviderHMAC, Line: 8},
	}
	if d := cmp.Diff(want, f.Triggers); d != "" {
		t.Errorf("triggers (-want +got):\n%s", d)
	}
	// Resolve fills in everything but the body, which each delivery brings.
	in, err := Resolve(f, Vars{Params: map[string]string{"repo": "acme/api"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Triggers[0].Message; got != "@reviewer new PR in acme/api: ${{ body.pull_request.html_url }}" {
		t.Errorf("resolved message = %q", got)
	}
}

func TestTriggerProblems(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ triggers, want string }{
		"not a list":       {"triggers: {webhook: x}\n", "wf.yaml:4:11: triggers must be a list"},
		"item not a map":   {"triggers: [pr]\n", "wf.yaml:4:12: each trigger must be a map"},
		"unknown key":      {"triggers: [{webhook: pr, secret_env: S, message: hi, secrets: x}]\n", `wf.yaml:4:54: unknown key "secrets" in trigger 1: known keys are webhook, provider, secret_env, events, message, report`},
		"missing webhook":  {"triggers: [{secret_env: S, message: hi}]\n", "wf.yaml:4:12: trigger 1 needs a name: add webhook:"},
		"bad name":         {"triggers: [{webhook: a/b, secret_env: S, message: hi}]\n", `wf.yaml:4:22: webhook name "a/b" is not valid`},
		"duplicate name":   {"triggers:\n  - {webhook: pr, secret_env: S, message: hi}\n  - {webhook: pr, secret_env: S, message: ho}\n", `wf.yaml:6:15: duplicate webhook "pr" (first at line 5)`},
		"missing message":  {"triggers: [{webhook: pr, secret_env: S}]\n", "wf.yaml:4:12: webhook pr needs a message"},
		"missing secret":   {"triggers: [{webhook: pr, message: hi}]\n", "wf.yaml:4:12: webhook pr needs secret_env"},
		"bad secret name":  {"triggers: [{webhook: pr, secret_env: 1X, message: hi}]\n", `wf.yaml:4:38: webhook pr: secret_env "1X" is not an environment variable name`},
		"bad body path":    {"triggers: [{webhook: pr, secret_env: S, message: \"${{ body.a..b }}\"}]\n", "wf.yaml:4:51: ${{ body.a..b }}: write a dot path into the JSON body"},
		"unknown variable": {"triggers: [{webhook: pr, secret_env: S, message: \"${{ params.nope }}\"}]\n", "wf.yaml:4:51: unknown variable ${{ params.nope }}"},
		"body elsewhere":   {"kickoff: \"${{ body.x }}\"\n", "wf.yaml:4:11: ${{ body.x }} is only set in a trigger's message"},
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

func TestTriggerEnvResolvedAtLoad(t *testing.T) {
	t.Parallel()
	f, err := Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(triggerAgents+"triggers: [{webhook: pr, secret_env: S, message: \"${{ env.AW_TEST_UNSET_VAR }} ${{ body.x }}\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(f, Vars{}); err == nil || !strings.Contains(err.Error(), "webhook pr message: environment variable AW_TEST_UNSET_VAR is not set") {
		t.Errorf("error = %v", err)
	}
}

func TestRenderTrigger(t *testing.T) {
	t.Parallel()
	const body = `{"pull_request": {"html_url": "https://github.com/acme/app/pull/7", "number": 7, "draft": false, "title": null,
		"labels": [{"name": "bug"}, {"name": "ui"}], "big": 12345678901234567890, "head": {"ref": "x<y>&z"}}}`
	tests := map[string]struct {
		message, body, want string
		missing             []string
		wantErr             string
	}{
		"string":           {message: "PR ${{ body.pull_request.html_url }}", body: body, want: "PR https://github.com/acme/app/pull/7"},
		"number kept":      {message: "#${{ body.pull_request.number }} ${{ body.pull_request.big }}", body: body, want: "#7 12345678901234567890"},
		"bool and null":    {message: "[${{ body.pull_request.draft }}][${{ body.pull_request.title }}]", body: body, want: "[false][]"},
		"array index":      {message: "${{ body.pull_request.labels.1.name }}", body: body, want: "ui"},
		"object as json":   {message: "${{ body.pull_request.head }}", body: body, want: `{"ref":"x<y>&z"}`},
		"missing path":     {message: "a${{ body.pull_request.nope }}b${{ body.pull_request.labels.9.name }}c", body: body, want: "abc", missing: []string{"body.pull_request.nope", "body.pull_request.labels.9.name"}},
		"not read again":   {message: "${{ body.x }}", body: `{"x": "${{ body.y }}", "y": "secret"}`, want: "${{ body.y }}"},
		"other vars kept":  {message: "${{ env.X }} ${{ body.x }}", body: `{"x": 1}`, want: "${{ env.X }} 1"},
		"no body needed":   {message: "plain", body: "not json", want: "plain"},
		"body not json":    {message: "${{ body.x }}", body: "payload=%7B%7D", wantErr: "the request body is not JSON"},
		"two json values":  {message: "${{ body.x }}", body: `{"x":1} {"x":2}`, wantErr: "the request body is not JSON"},
		"path through str": {message: "[${{ body.x.y }}]", body: `{"x": "s"}`, want: "[]", missing: []string{"body.x.y"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, missing, err := RenderTrigger(tc.message, []byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !cmp.Equal(missing, tc.missing) {
				t.Errorf("got %q missing %q, want %q missing %q", got, missing, tc.want, tc.missing)
			}
		})
	}
}
