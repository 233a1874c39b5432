package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// questionsJSON is `questions --json` with extra arguments.
func (c *cli) questionsJSON(args ...string) []api.Question {
	c.t.Helper()
	var l api.QuestionList
	if err := json.Unmarshal([]byte(c.ok(append([]string{"questions", "--json"}, args...)...)), &l); err != nil {
		c.t.Fatalf("questions --json: %v", err)
	}
	return l.Questions
}

// A mock agent asks the owner with ask_user: the question shows in the
// channel and in `questions`, survives a daemon restart, and `answer`
// (or POST /questions/{id}/answer) wakes the agent with the answer in its
// inbox and closes the question; a second answer is a conflict naming who
// answered, an unknown id is not found (issue 28, item 1).
func TestE2EAgentAsksTheOwner(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock", "--config", mockConfig(t,
		map[string]any{"tool": "ask_user", "args": map[string]any{"question": "pg or sqlite?", "options": []string{"pg", "sqlite"},
			"context": "the team cannot agree"}, "when": map[string]any{"text": "start"}},
		map[string]any{"result": "asked {{last.id}}", "when": map[string]any{"text": "start"}},
		map[string]any{"result": "got: {{inbox_summary}}", "when": map[string]any{"text": "answer to"}}))
	c.ok("send", "alice", "start")
	var q api.Question
	c.waitFor("alice's question", func() bool {
		qs := c.questionsJSON()
		if len(qs) == 1 {
			q = qs[0]
		}
		return len(qs) == 1
	})
	if q.Agent != "alice@global:main" || q.State != "pending" || q.Question != "pg or sqlite?" || strings.Join(q.Options, ",") != "pg,sqlite" || q.RunID == "" {
		t.Errorf("question = %+v", q)
	}
	c.waitFor("alice's run to end", func() bool { return strings.Contains(c.ok("peek"), "[alice] asked "+q.ID) })
	if peek := c.ok("peek"); !strings.Contains(peek, "alice asks the owner ("+q.ID+"): pg or sqlite? [options: pg | sqlite]") ||
		!strings.Contains(peek, "agent-worker answer "+q.ID) {
		t.Errorf("the channel does not show the question and how to answer it:\n%s", peek)
	}
	if out := c.ok("questions", "alice"); !strings.Contains(out, q.ID+"  pending  alice@global:main") ||
		!strings.Contains(out, "options: pg | sqlite") || !strings.Contains(out, "context: the team cannot agree") {
		t.Errorf("questions alice:\n%s", out)
	}

	c.ok("stop", "--all")
	if qs := c.questionsJSON("@global"); len(qs) != 1 || qs[0].ID != q.ID || qs[0].State != "pending" {
		t.Fatalf("after a restart the questions are %+v, want %s pending", qs, q.ID)
	}

	if r := c.run("answer", "q_0000000000000000", "pg"); r.code != api.ExitNotFound || !strings.Contains(r.stderr, "no question") {
		t.Errorf("answer to an unknown id: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run("answer", q.ID); r.code != api.ExitUsage {
		t.Errorf("answer without an answer: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := c.ok("answer", q.ID, "PG"); !strings.Contains(out, "answered "+q.ID+": alice@global:main now has \"pg\" in its inbox") {
		t.Errorf("answer printed %q", out)
	}
	c.waitFor("alice's reply to the answer", func() bool {
		return strings.Contains(c.ok("peek"), "[alice] got: user: alice answer to "+q.ID)
	})
	if peek := c.ok("peek"); !strings.Contains(peek, "): pg") {
		t.Errorf("the answer is not in the channel:\n%s", peek)
	}
	if qs := c.questionsJSON(); len(qs) != 0 {
		t.Errorf("pending after the answer: %+v", qs)
	}
	if qs := c.questionsJSON("--all"); len(qs) != 1 || qs[0].State != "answered" || qs[0].Answer != "pg" || qs[0].AnsweredBy != "user" {
		t.Errorf("questions --all = %+v", qs)
	}
	if r := c.run("answer", q.ID, "sqlite"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "answered already, by user") {
		t.Errorf("a second answer: exit %d, stderr %q", r.code, r.stderr)
	}

	// The same through the HTTP API.
	c.ok("send", "alice", "start again")
	var q2 api.Question
	c.waitFor("alice's second question", func() bool {
		qs := c.questionsJSON()
		if len(qs) == 1 {
			q2 = qs[0]
		}
		return len(qs) == 1
	})
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, d.URL()+"/questions/"+q2.ID+"/answer", strings.NewReader(`{"answer": "sqlite", "by": "ops"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got api.Question
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || got.State != "answered" || got.AnsweredBy != "ops" {
		t.Fatalf("POST answer: %s, %+v, %v", resp.Status, got, err)
	}
	c.waitFor("alice's reply to the HTTP answer", func() bool {
		return strings.Contains(c.ok("peek"), "[alice] got: user: alice answer to "+q2.ID)
	})
}
