package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// answeredBy is who the API records for an answer, approval or denial
// given in the console: the owner, through the console.
const answeredBy = "user (console)"

// needsYou is the "Needs you" panel: what agents wait for the owner to
// answer or approve, on the overview (every team) or a team's page.
type needsYou struct {
	CSRF string
	// Back is the page a button returns to when the script is off.
	Back string
	// Fragment is where the script fetches the panel's items again.
	Fragment string
	// OneTeam is a team's page: its agents are named without the team.
	OneTeam bool
	Items   []ask
	// Edits are the workflow edits that wait for the owner because they
	// widen what runs may do.
	Edits []edit
	// Error says why the questions could not be read; the page shows the
	// rest anyway.
	Error string
}

// ask is one pending question or approval in the panel.
type ask struct {
	// Q is the question (an approval's Question is its exact action).
	Q api.Question
	// Who is the asking agent as the page names it; TeamURL its team's page.
	Who, TeamURL string
	Approval     bool
}

// edit is one workflow edit waiting in the panel, shown as a diff of the
// policy: each line is something the edit would let runs do.
type edit struct {
	W api.Workflow
	// Action is where its Accept button posts.
	Action, TeamURL string
}

// needsYou reads the pending questions and approvals of scope (every
// team's when nil) for a page whose buttons come back to back.
func (v *views) needsYou(ctx context.Context, ss session, scope *api.Target, back string) needsYou {
	p := needsYou{CSRF: ss.csrf, Back: back, Fragment: "/console/needs-you", OneTeam: scope != nil}
	if scope != nil {
		p.Fragment += "?target=" + url.QueryEscape(scope.String())
	}
	qs, err := v.api.Questions(ctx, scope, false)
	if err != nil {
		p.Error = "The questions could not be read: " + err.Error()
	}
	for _, q := range qs {
		a := ask{Q: q, Who: q.Agent, TeamURL: "/console/", Approval: q.Kind == "approval"}
		if t, err := api.ParseTarget(q.Agent); err == nil {
			a.Who, a.TeamURL = t.Display(), teamPath(api.Target{Workflow: t.Workflow, Tag: t.Tag})
			if p.OneTeam {
				a.Who = t.Agent
			}
		}
		p.Items = append(p.Items, a)
	}
	wfs, err := v.api.ListWorkflows(ctx)
	if err != nil {
		p.Error = strings.TrimSpace(p.Error + " The workflows could not be read: " + err.Error())
	}
	for _, w := range wfs {
		if w.Pending == nil || scope != nil && (w.Name != scope.Workflow || w.Tag != scope.Tag) {
			continue
		}
		t := api.Target{Workflow: w.Name, Tag: w.Tag}
		p.Edits = append(p.Edits, edit{W: w, TeamURL: teamPath(t),
			Action: "/console/workflows/" + url.PathEscape(w.Name) + "/" + url.PathEscape(w.Tag) + "/accept"})
	}
	return p
}

// acceptEdit is the Accept button of a waiting workflow edit: one API
// call, whose refusal (nothing waits any more, --sandbox required) is the
// response.
func (v *views) acceptEdit(w http.ResponseWriter, r *http.Request, ss session) error {
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/console/") {
		back = "/console/"
	}
	t, err := api.ParseTarget("@" + r.PathValue("wf") + ":" + r.PathValue("tag"))
	if err != nil {
		return err
	}
	if _, err := v.api.AcceptWorkflow(r.Context(), t); err != nil {
		return err
	}
	return done(w, r, back)
}

// needsYouItems is the panel's items now, as HTML for the page's script
// to put in place of the ones shown (?target=@wf:tag on a team's page).
// A failure is an error response, which the script ignores: the items
// shown stay.
func (v *views) needsYouItems(w http.ResponseWriter, r *http.Request, ss session) error {
	back, scope := "/console/", (*api.Target)(nil)
	if s := r.URL.Query().Get("target"); s != "" {
		t, err := api.ParseTarget(s)
		if err != nil {
			return err
		}
		if !t.IsScope() {
			return api.Errorf(api.CodeInvalid, "target=%s: the panel shows a team's questions: give @workflow:tag", s)
		}
		back, scope = teamPath(t), &t
	}
	p := v.needsYou(r.Context(), ss, scope, back)
	if p.Error != "" {
		return api.Errorf(api.CodeUnavailable, "%s", p.Error)
	}
	return v.s.pages().fragment(w, "needsyou-items", p)
}

// decide is one button of the panel, one API call: answer a question (an
// option or the text box), or approve or deny an approval (with the
// optional reason). The API's refusal (answered already, unknown id, an
// empty answer) is the response.
func (v *views) decide(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx, id := r.Context(), r.PathValue("id")
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/console/") {
		back = "/console/"
	}
	var err error
	switch verb := r.PathValue("verb"); verb {
	case "answer":
		_, err = v.api.AnswerQuestionAs(ctx, id, r.PostFormValue("answer"), answeredBy)
	case "approve", "deny":
		_, err = v.api.DecideAs(ctx, id, verb == "approve", r.PostFormValue("reason"), answeredBy)
	default:
		return api.Errorf(api.CodeNotFound, "no %q for a question: answer, approve or deny", verb)
	}
	if err != nil {
		return err
	}
	return done(w, r, back)
}
