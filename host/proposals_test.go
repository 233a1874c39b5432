package host

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// GET /proposals shows what the agents opened and voted over MCP, in the
// shape team_proposal_status gives them.
func TestHTTPProposals(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	a, b := th.join(t, "a@vote"), th.join(t, "b@vote")
	th.join(t, "c@vote")
	open := a.ok("team_proposal_create", map[string]any{"type": "decision", "title": "Pick a DB", "options": []string{"postgres", "sqlite"}})
	a.ok("team_vote", map[string]any{"proposal": open["id"], "choice": "postgres"})
	b.ok("team_vote", map[string]any{"proposal": open["id"], "choice": "SQLite", "reason": "simple"})
	closed := a.ok("team_proposal_create", map[string]any{"type": "approval", "title": "Ship it?"})
	a.ok("team_proposal_cancel", map[string]any{"proposal": closed["id"]})

	wantOpen := api.Proposal{ID: open["id"].(string), Type: "decision", Title: "Pick a DB", Creator: "a",
		Options: []string{"postgres", "sqlite"}, Resolution: "plurality", Quorum: 3, State: "active",
		Votes: []api.Vote{{Voter: "a", Choice: "postgres"}, {Voter: "b", Choice: "sqlite", Reason: "simple"}}}
	wantClosed := api.Proposal{ID: closed["id"].(string), Type: "approval", Title: "Ship it?", Creator: "a",
		Options: []string{"approve", "reject"}, Resolution: "plurality", Quorum: 3, State: "cancelled", Votes: []api.Vote{}}
	ignoreExpiry := cmpopts.IgnoreFields(api.Proposal{}, "ExpiresAt")

	code, e, body := th.call(t, "GET", "/proposals/vote/main", "")
	var all api.ProposalList
	if err := json.Unmarshal(body, &all); code != http.StatusOK || err != nil {
		t.Fatalf("GET /proposals/vote/main = %d %v (%s)", code, err, e.Message)
	}
	if diff := cmp.Diff([]api.Proposal{wantClosed, wantOpen}, all.Proposals, ignoreExpiry); diff != "" {
		t.Errorf("all proposals, newest first (-want +got):\n%s", diff)
	}
	if all.Proposals[1].ExpiresAt.IsZero() {
		t.Errorf("active proposal has no expiry")
	}

	// The client's ?active=true leaves the cancelled one out.
	active, err := th.client().Proposals(context.Background(), api.Target{Workflow: "vote", Tag: "main"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]api.Proposal{wantOpen}, active, ignoreExpiry); diff != "" {
		t.Errorf("active proposals (-want +got):\n%s", diff)
	}

	// A known workflow without proposals answers an empty list, not null.
	th.join(t, "a@quiet")
	if code, _, body := th.call(t, "GET", "/proposals/quiet/main?active=true", ""); code != http.StatusOK || strings.TrimSpace(string(body)) != `{"proposals":[]}` {
		t.Errorf("no proposals = %d %s", code, body)
	}

	for name, tc := range map[string]struct {
		path   string
		status int
		code   api.Code
		says   string
	}{
		"unknown workflow": {"/proposals/nowhere/main", 404, api.CodeNotFound, `workflow "nowhere:main" not found`},
		"unknown tag":      {"/proposals/vote/pr-9?active=true", 404, api.CodeNotFound, `workflow "vote:pr-9" not found`},
		"bad active":       {"/proposals/vote/main?active=yes", 400, api.CodeInvalid, "active=true"},
		"bad workflow":     {"/proposals/no%20way/main", 400, api.CodeInvalid, "workflow"},
	} {
		code, e, body := th.call(t, "GET", tc.path, "")
		if code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: GET %s = %d %s; want %d %s saying %q", name, tc.path, code, body, tc.status, tc.code, tc.says)
		}
	}
}

// GET /docs carries the documentOwner, and leaves it out when everyone may
// write.
func TestHTTPDocListOwner(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	ctx := context.Background()
	if _, err := th.DB().CreateWorkflow(ctx, store.Workflow{Name: "review", Tag: "main", Workdir: t.TempDir(), DocsOwner: "lead"}); err != nil {
		t.Fatal(err)
	}
	th.join(t, "lead@review").ok("team_doc_write", map[string]any{"content": "owned"})
	l, err := th.client().DocList(ctx, api.Target{Workflow: "review", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != "lead" || len(l.Documents) != 1 || l.Documents[0].Path != "notes.md" {
		t.Errorf("review's documents = %+v; want notes.md owned by lead", l)
	}
	code, _, body := th.call(t, "GET", "/docs/global/main", "")
	if code != http.StatusOK || strings.Contains(string(body), `"owner"`) {
		t.Errorf("GET /docs/global/main = %d %s; want no owner", code, body)
	}
	if code, e, _ := th.call(t, "GET", "/docs/nowhere/main", ""); code != http.StatusNotFound || !strings.Contains(e.Message, `workflow "nowhere:main" not found`) {
		t.Errorf("docs of an unknown workflow = %d %q", code, e.Message)
	}
}
