package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReplaceTriggers(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	scope := Scope{Workflow: "team", Tag: "main"}
	pr := Trigger{Workflow: "team", Tag: "main", Name: "pr", SecretEnv: "S", Message: "@a ${{ body.x }}", Line: 3}
	push := Trigger{Workflow: "team", Tag: "main", Name: "push", SecretEnv: "P", Message: "@a push", Line: 6}
	if err := db.ReplaceTriggers(ctx, scope, []Trigger{push, pr}); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListTriggers(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Trigger{pr, push}, got); d != "" {
		t.Errorf("triggers (-want +got):\n%s", d)
	}
	// An edit that changes pr and drops push.
	pr.Message, pr.Line = "@a changed", 9
	if err := db.ReplaceTriggers(ctx, scope, []Trigger{pr}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListTriggers(ctx, scope); err != nil || !cmp.Equal([]Trigger{pr}, got) {
		t.Errorf("after the edit: %+v, %v", got, err)
	}
	if err := db.ReplaceTriggers(ctx, scope, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListTriggers(ctx, scope); err != nil || len(got) != 0 {
		t.Errorf("after removing every trigger: %+v, %v", got, err)
	}
}

// A delivery id posts once within DeliveryMemory and again after it; ids
// are per trigger, and a delivery without an id is never deduplicated.
func TestPostDeliveryOnce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	db := openAt(t, testPath(t), Options{Now: clk.Now})
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "team", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	msg := NewMessage{Workflow: "team", Tag: "main", Sender: "system", Content: "@alice hook", Recipients: []string{"alice"}}
	post := func(trigger, id string) (Message, bool) {
		t.Helper()
		m, dup, err := db.PostDelivery(ctx, Delivery{Workflow: "team", Tag: "main", Trigger: trigger, ID: id}, msg)
		if err != nil {
			t.Fatal(err)
		}
		return m, dup
	}
	first, dup := post("pr", "d-1")
	if dup || first.Seq == 0 {
		t.Fatalf("first delivery: %+v duplicate %v", first, dup)
	}
	if again, dup := post("pr", "d-1"); !dup || again.Seq != first.Seq {
		t.Errorf("repeat: %+v duplicate %v, want the first's seq %d", again, dup, first.Seq)
	}
	if _, dup := post("push", "d-1"); dup {
		t.Errorf("the same id on another trigger was taken for a repeat")
	}
	if _, dup := post("pr", ""); dup {
		t.Errorf("a delivery without an id was taken for a repeat")
	}
	clk.Set(t0.Add(DeliveryMemory - time.Second))
	if _, dup := post("pr", "d-1"); !dup {
		t.Errorf("a repeat just inside the window posted again")
	}
	clk.Set(t0.Add(DeliveryMemory))
	if _, dup := post("pr", "d-1"); dup {
		t.Errorf("a repeat after %v was still refused", DeliveryMemory)
	}
	// Four posts: d-1, push's d-1, the id-less one and d-1 after the window.
	if n := queryInt(t, db, `SELECT count(*) FROM messages WHERE workflow = 'team'`); n != 4 {
		t.Errorf("%d messages posted, want 4", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM message_recipients WHERE agent = 'alice'`); n != 4 {
		t.Errorf("alice's inbox has %d rows, want 4", n)
	}
	// Old ids were forgotten; the workflow's deletion takes the rest.
	if n := queryInt(t, db, `SELECT count(*) FROM webhook_deliveries WHERE received_at < ?`, t0.Add(time.Hour).UnixMilli()); n != 0 {
		t.Errorf("%d delivery ids older than the window kept", n)
	}
	if err := db.DeleteWorkflow(ctx, "team", "main"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM webhook_deliveries`); n != 0 {
		t.Errorf("%d delivery ids outlived their workflow", n)
	}
}

// A delivery with a report arms it once: a repeat of its id arms nothing;
// firing it moves it into the outbox once, under an id of its own, however
// often it is fired; LastMessageFrom finds what the agent said after it.
func TestTriggerReportFiredOnce(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	scope := Scope{Workflow: "team", Tag: "main"}
	pr := Trigger{Workflow: "team", Tag: "main", Name: "mr", SecretEnv: "S", Message: "@a", Provider: "gitlab", Events: []string{"merge_request.open"}, Report: `{"To":"gitlab"}`, Line: 3}
	if err := db.ReplaceTriggers(ctx, scope, []Trigger{pr}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListTriggers(ctx, scope); err != nil || !cmp.Equal([]Trigger{pr}, got) {
		t.Errorf("triggers: %+v, %v", got, err)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "team", Tag: "main", Sender: "alice", Content: "an old review"}); err != nil {
		t.Fatal(err)
	}
	d := Delivery{Workflow: "team", Tag: "main", Trigger: "mr", ID: "uuid-1", Report: `{"url":"http://gitlab/notes"}`}
	msg, dup, err := db.PostDelivery(ctx, d, NewMessage{Workflow: "team", Tag: "main", Sender: "system", Content: "@alice review"})
	if err != nil || dup {
		t.Fatalf("post: %v, duplicate %v", err, dup)
	}
	if _, dup, err := db.PostDelivery(ctx, d, NewMessage{Workflow: "team", Tag: "main", Sender: "system", Content: "@alice review"}); err != nil || !dup {
		t.Fatalf("repeat: %v, duplicate %v", err, dup)
	}
	rs, err := db.PendingReports(ctx, scope)
	if err != nil || len(rs) != 1 || rs[0].Seq != msg.Seq || rs[0].DeliveryID != "uuid-1" || rs[0].Report != d.Report {
		t.Fatalf("pending reports: %+v, %v", rs, err)
	}
	if _, found, err := db.LastMessageFrom(ctx, scope, "alice", rs[0].Seq); err != nil || found {
		t.Errorf("alice said nothing after the delivery yet: found %v, %v", found, err)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "team", Tag: "main", Sender: "alice", Content: "LGTM"}); err != nil {
		t.Fatal(err)
	}
	if m, found, err := db.LastMessageFrom(ctx, scope, "alice", rs[0].Seq); err != nil || !found || m.Content != "LGTM" {
		t.Errorf("alice's last message: %+v, %v, %v", m, found, err)
	}
	nd := NotifyDelivery{Event: "report", Workflow: "team", Tag: "main", URL: "http://gitlab/notes", Body: `{"body":"LGTM"}`, SecretEnv: "T", Auth: AuthGitLab}
	got, fired, err := db.FireReport(ctx, rs[0].ID, nd)
	if err != nil || !fired || got.ID != ReportDeliveryID(rs[0].ID) {
		t.Fatalf("fire: %+v, %v, %v", got, fired, err)
	}
	if _, fired, err := db.FireReport(ctx, rs[0].ID, nd); err != nil || fired {
		t.Errorf("fired again: %v, %v", fired, err)
	}
	if rs, err := db.PendingReports(ctx, scope); err != nil || len(rs) != 0 {
		t.Errorf("pending after firing: %+v, %v", rs, err)
	}
	ds, err := db.ListDeliveries(ctx, DeliveryFilter{})
	if err != nil || len(ds) != 1 || ds[0].ID != got.ID || ds[0].Auth != AuthGitLab || ds[0].SecretEnv != "T" || ds[0].Event != "report" {
		t.Errorf("outbox: %+v, %v", ds, err)
	}
}
