package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/efforts"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// fakeEfforts is Efforts as a struct of function fields; a nil field
// answers as a call that should not happen.
type fakeEfforts struct {
	start  func(efforts.StartRequest) (tools.EffortResult, error)
	next   func(efforts.Step) (tools.EffortResult, error)
	finish func(efforts.FinishRequest) (tools.EffortResult, error)
	list   func(store.EffortFilter) (api.EffortList, error)
	show   func(string, *store.AgentKey) (api.EffortShow, error)
	skills func(*store.Scope) (api.SkillList, error)
	file   func(id, name string) (api.EffortArtifactFile, error)
}

var errUnexpected = errors.New("unexpected call")

func (f *fakeEfforts) SkillList(_ context.Context, s *store.Scope) (api.SkillList, error) {
	return f.skills(s)
}
func (f *fakeEfforts) Start(_ context.Context, r efforts.StartRequest) (tools.EffortResult, error) {
	return f.start(r)
}
func (f *fakeEfforts) Continue(_ context.Context, st efforts.Step) (tools.EffortResult, error) {
	return f.next(st)
}
func (f *fakeEfforts) Finish(_ context.Context, r efforts.FinishRequest) (tools.EffortResult, error) {
	return f.finish(r)
}
func (f *fakeEfforts) Log(context.Context, store.AgentKey, string) (tools.EffortResult, error) {
	return tools.EffortResult{}, errUnexpected
}
func (f *fakeEfforts) List(_ context.Context, fl store.EffortFilter) (api.EffortList, error) {
	return f.list(fl)
}
func (f *fakeEfforts) Show(_ context.Context, id string, a *store.AgentKey) (api.EffortShow, error) {
	return f.show(id, a)
}
func (f *fakeEfforts) Artifact(_ context.Context, id, name string) (api.EffortArtifactFile, error) {
	return f.file(id, name)
}
func (f *fakeEfforts) Problems() []string { return nil }

func effortsAPI(f *fakeEfforts) http.Handler {
	nowhere := http.NotFoundHandler()
	return New(Deps{Workflows: &fakeWorkflows{}, Sched: &fakeScheduler{}, Efforts: f, Token: testToken, Log: hclog.NewNullLogger(),
		MCP: nowhere, Metrics: nowhere, Info: func() api.DaemonInfo { return api.DaemonInfo{Host: "127.0.0.1", Port: 5099} }})
}

// The efforts routes read their targets and bodies, refuse bad ones with
// a clear message before the service is called, and map the service's
// errors to their statuses.
func TestEffortRoutes(t *testing.T) {
	t.Parallel()
	alice := store.AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}
	var called []string
	f := &fakeEfforts{
		start: func(r efforts.StartRequest) (tools.EffortResult, error) {
			called = append(called, "start "+r.Agent.String()+" "+r.Dir+" "+r.Skill+" "+r.Mode)
			if r.Skill == "nope" {
				return tools.EffortResult{}, contract.Errorf(contract.CodeNotFound, "no skill \"nope\": did you mean implement?")
			}
			if r.Dir == "/etc" {
				return tools.EffortResult{}, contract.Errorf(contract.CodePermission, "dir /etc is outside the workspace")
			}
			return tools.EffortResult{Effort: "effort-1"}, nil
		},
		next: func(st efforts.Step) (tools.EffortResult, error) {
			called = append(called, "next "+st.Agent.String()+" "+st.Proof.Text["plan_summary"]+" "+st.Notes+" token="+st.Token)
			return tools.EffortResult{}, contract.Errorf(contract.CodeConflict, "already used: the effort is at phase 2 of 4, test-first")
		},
		finish: func(r efforts.FinishRequest) (tools.EffortResult, error) {
			called = append(called, "finish "+r.Agent.String()+" "+r.Reason)
			return tools.EffortResult{Effort: "effort-1", State: "abandoned"}, nil
		},
		list: func(fl store.EffortFilter) (api.EffortList, error) {
			called = append(called, "list "+fl.Dir+" "+fl.Workflow+":"+fl.Tag)
			return api.EffortList{}, nil
		},
		show: func(id string, a *store.AgentKey) (api.EffortShow, error) {
			who := ""
			if a != nil {
				who = a.String()
			}
			called = append(called, "show "+id+" "+who)
			return api.EffortShow{}, nil
		},
		file: func(id, name string) (api.EffortArtifactFile, error) {
			called = append(called, "artifact "+id+" "+name)
			if name != "1_IMPLEMENT_PLAN.md" {
				return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s has no artifact %q", id, name)
			}
			return api.EffortArtifactFile{Content: "# Plan"}, nil
		},
		skills: func(s *store.Scope) (api.SkillList, error) {
			called = append(called, "skills")
			return api.SkillList{Skills: []api.Skill{{Name: "implement"}}, Folders: []string{"/p/skills"}}, nil
		},
	}
	h := effortsAPI(f)
	for name, tc := range map[string]struct {
		req     request
		status  int
		code    api.Code
		message string
	}{
		"start":               {request{method: "POST", path: "/efforts", body: `{"agent": "alice@wf", "dir": "/p", "skill": "implement", "mode": "solo"}`}, 201, "", ""},
		"start unknown skill": {request{method: "POST", path: "/efforts", body: `{"agent": "alice@wf", "dir": "/p", "skill": "nope"}`}, 404, api.CodeNotFound, "did you mean implement?"},
		"start outside":       {request{method: "POST", path: "/efforts", body: `{"agent": "alice@wf", "dir": "/etc", "skill": "implement"}`}, 403, api.CodePermission, "outside the workspace"},
		"start no agent":      {request{method: "POST", path: "/efforts", body: `{"dir": "/p", "skill": "implement"}`}, 400, api.CodeInvalid, "which agent?"},
		"start bad agent":     {request{method: "POST", path: "/efforts", body: `{"agent": "@wf", "dir": "/p", "skill": "implement"}`}, 400, api.CodeInvalid, ""},
		"start unknown field": {request{method: "POST", path: "/efforts", body: `{"agent": "alice@wf", "token": "x"}`}, 400, api.CodeInvalid, `unknown field "token"`},
		"next replayed":       {request{method: "POST", path: "/efforts/next", body: `{"agent": "alice@wf", "proof": {"plan_summary": "p"}, "notes": "n"}`}, 409, api.CodeConflict, "already used"},
		"next proof typed":    {request{method: "POST", path: "/efforts/next", body: `{"agent": "alice@wf", "proof": {"n": 3}}`}, 400, api.CodeInvalid, `must be a string`},
		"abandon":             {request{method: "POST", path: "/efforts/finish", body: `{"agent": "alice@wf", "abandon": true, "reason": "stuck"}`}, 200, "", ""},
		"list":                {request{method: "GET", path: "/efforts?dir=/p&target=@wf"}, 200, "", ""},
		"list bad target":     {request{method: "GET", path: "/efforts?target=@@"}, 400, api.CodeInvalid, ""},
		"show id":             {request{method: "GET", path: "/efforts/effort-3"}, 200, "", ""},
		"show agent":          {request{method: "GET", path: "/efforts/-?agent=alice@wf"}, 200, "", ""},
		"show nothing":        {request{method: "GET", path: "/efforts/-"}, 400, api.CodeInvalid, "needs an effort id"},
		"skill":               {request{method: "GET", path: "/skills/implement"}, 200, "", ""},
		"artifact":            {request{method: "GET", path: "/efforts/effort-3/artifacts/1_IMPLEMENT_PLAN.md"}, 200, "", ""},
		"artifact not one":    {request{method: "GET", path: "/efforts/effort-3/artifacts/..%2Fsecret.md"}, 404, api.CodeNotFound, `no artifact "../secret.md"`},
		"artifact nested":     {request{method: "GET", path: "/efforts/effort-3/artifacts/a/b.md"}, 404, api.CodeNotFound, "no route"},
		"skill misspelt":      {request{method: "GET", path: "/skills/implemnt"}, 404, api.CodeNotFound, "did you mean implement?"},
		"skills of an agent":  {request{method: "GET", path: "/skills?target=alice@wf"}, 400, api.CodeInvalid, "names an agent"},
	} {
		status, e, _ := do(t, h, tc.req)
		if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
			t.Errorf("%s: answer %d %s %q, want %d %s containing %q", name, status, e.Code, e.Message, tc.status, tc.code, tc.message)
		}
	}
	want := []string{
		"start " + alice.String() + " /p implement solo",
		"start " + alice.String() + " /p nope ",
		"start " + alice.String() + " /etc implement ",
		"next " + alice.String() + " p n token=",
		"finish " + alice.String() + " stuck",
		"list /p wf:main",
		"show effort-3 ",
		"show  " + alice.String(),
		"skills", "skills",
		"artifact effort-3 1_IMPLEMENT_PLAN.md",
		"artifact effort-3 ../secret.md",
	}
	if diff := cmp.Diff(want, called, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("service calls (-want +got):\n%s", diff)
	}
}
