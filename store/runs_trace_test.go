package store

import (
	"context"
	"testing"
)

// A message and a run keep the traceparent they were written with; none
// reads as "".
func TestTraceparentKept(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "w", Tag: "t", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	m, err := db.AppendMessage(ctx, NewMessage{Workflow: "w", Tag: "t", Sender: "user", Content: "@alice hi", Recipients: []string{"alice"}, Traceparent: tp})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.AppendMessage(ctx, NewMessage{Workflow: "w", Tag: "t", Sender: "user", Content: "@alice again", Recipients: []string{"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := db.Inbox(ctx, AgentKey{Workflow: "w", Tag: "t", Name: "alice"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(inbox) != 2 || inbox[0].Seq != m.Seq || inbox[0].Traceparent != tp || inbox[1].Seq != plain.Seq || inbox[1].Traceparent != "" {
		t.Errorf("inbox = %+v, want the first with %s and the second with none", inbox, tp)
	}
	r, err := db.StartRun(ctx, Run{ID: "run_tp", Agent: AgentKey{Workflow: "w", Tag: "t", Name: "alice"}, Backend: "mock", Attempt: 1, Traceparent: tp})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := db.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Traceparent != tp {
		t.Errorf("run traceparent = %q, want %q", got.Traceparent, tp)
	}
}
