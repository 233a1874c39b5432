package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// A question and an approval each reach the owner's webhook, signed, with
// the question's id, and the agent then goes on once answered or
// approved (issue 28, items 1, 2 and 4).
func TestE2EQuestionsAndApprovalsNotifyTheOwner(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	recv := newHookReceiver(t, http.StatusNoContent)
	const secret = "e2e-ask-s3cret"
	file := filepath.Join(t.TempDir(), "hitl.yaml")
	writeFile(t, file, `
name: hitl
agents:
  asker:
    backend: mock
    config:
      script:
        - {tool: ask_user, args: {question: "ship it?", options: [yes, no]}, when: {text: "start"}}
        - {result: "asked", when: {text: "start"}}
        - {result: "got: {{inbox_summary}}", when: {text: "answer to"}}
  gated:
    backend: mock
    approvals: {tools: [my_status_set]}
    config:
      script:
        - {tool: my_status_set, args: {task: "shipping"}}
        - result: status set
notify:
  - webhook: "`+recv.srv.URL+`/owner"
    events: [question, approval]
    secret_env: ASK_E2E_SECRET
`)
	c.startDaemon("ASK_E2E_SECRET=" + secret)
	c.ok("start", file, "--background")
	signed := func(h hookRequest) {
		t.Helper()
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(h.body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(h.sig), []byte(want)) {
			t.Errorf("%s notification: signature %q does not match its body under the secret", h.event, h.sig)
		}
	}
	event := func(kind string) api.NotificationBody {
		t.Helper()
		var got []hookRequest
		c.waitFor("the "+kind+" notification", func() bool {
			got = recv.requests(func(h hookRequest) bool { return h.event == kind })
			return len(got) > 0
		})
		signed(got[0])
		var body api.NotificationBody
		if err := json.Unmarshal(got[0].body, &body); err != nil {
			t.Fatalf("%s body %s: %v", kind, got[0].body, err)
		}
		return body
	}

	c.ok("send", "asker@hitl", "start")
	body := event("question")
	q := c.pendingQuestion("asker@hitl")
	if body.IDs["question"] != q.ID || body.Agent != "asker" || !strings.Contains(body.Text, "asker asks the owner ("+q.ID+"): ship it?") {
		t.Errorf("question notification %+v, want %s", body, q.ID)
	}
	c.ok("answer", q.ID, "yes")
	c.waitFor("asker's reply", func() bool {
		return strings.Contains(c.ok("peek", "@hitl"), "[asker] got: user: asker answer to "+q.ID)
	})

	c.ok("send", "gated@hitl", "go")
	body = event("approval")
	a := c.pendingApproval("gated@hitl")
	if body.IDs["question"] != a.ID || body.Agent != "gated" || !strings.Contains(body.Text, "gated waits for approval ("+a.ID+"): my_status_set") {
		t.Errorf("approval notification %+v, want %s", body, a.ID)
	}
	c.ok("approve", a.ID)
	c.waitFor("gated's reply", func() bool { return strings.Contains(c.ok("peek", "@hitl"), "[gated] status set") })
}

// pendingQuestion waits for the one pending question of agent.
func (c *cli) pendingQuestion(agent string) api.Question {
	c.t.Helper()
	var q api.Question
	c.waitFor(agent+"'s question", func() bool {
		for _, x := range c.questionsJSON(agent) {
			if x.Kind == "question" && x.State == "pending" {
				q = x
				return true
			}
		}
		return false
	})
	return q
}
