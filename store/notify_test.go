package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A workflow's subscriptions are replaced whole by each load, and go with
// the workflow.
func TestNotifySubsReplaced(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	if _, err := db.SaveWorkflow(ctx, Workflow{Name: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	scope := Scope{Workflow: "team", Tag: "main"}
	a := NotifySub{URL: "https://a.example/h?k=1", Events: []string{"question", "idle"}, SecretEnv: "S", Line: 4}
	b := NotifySub{URL: "http://b.example", Events: []string{"run_failed"}, Line: 7}
	if err := db.ReplaceNotifySubs(ctx, scope, []NotifySub{a, b}); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListNotifySubs(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]NotifySub{a, b}, got); d != "" {
		t.Errorf("subscriptions (-want +got):\n%s", d)
	}
	if err := db.ReplaceNotifySubs(ctx, scope, []NotifySub{b}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListNotifySubs(ctx, scope); err != nil || len(got) != 1 || got[0].URL != b.URL {
		t.Errorf("after an edit that drops one: %+v, %v", got, err)
	}
	if err := db.DeleteWorkflow(ctx, "team", "main"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListNotifySubs(ctx, scope); err != nil || len(got) != 0 {
		t.Errorf("after the workflow is deleted: %+v, %v", got, err)
	}
}

// The outbox: a delivery is due at once, claimed by one member at a time
// until its lease ends, retried when the attempt says so, delivered or
// failed for good; a claim that is not recorded (a member died) lets go
// with the lease, and an attempt recorded by a member that lost the claim
// changes nothing.
func TestDeliveriesClaimRetryDeliver(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := testPath(t)
	ctx := t.Context()
	m1 := openAt(t, path, Options{Now: clk.Now, Daemon: "m1"})
	m2 := openAt(t, path, Options{Now: clk.Now, Daemon: "m2"})
	d1 := NotifyDelivery{ID: NewDeliveryID(), Event: "run_failed", Workflow: "team", Tag: "main", URL: "https://a.example/h", Body: `{"text":"x"}`, SecretEnv: "S"}
	d2 := NotifyDelivery{ID: NewDeliveryID(), Event: "member_down", URL: "https://b.example/h", Body: `{"text":"y"}`}
	added, err := m1.AddDeliveries(ctx, []NotifyDelivery{d1, d2})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 || added[0].State != DeliveryPending || !added[0].NextAt.Equal(clk.Now()) {
		t.Fatalf("added %+v", added)
	}
	if at, ok, err := m1.NextDeliveryDue(ctx); err != nil || !ok || !at.Equal(clk.Now()) {
		t.Errorf("next due = %v, %v, %v; want now", at, ok, err)
	}

	lease := time.Minute
	got, err := m1.ClaimDeliveries(ctx, "m1", lease, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("m1 claims %+v, %v; want one (the limit)", got, err)
	}
	first := got[0]
	if first.Body == "" || first.SecretEnv == "" && first.ID == d1.ID {
		t.Errorf("claimed %+v without its body or secret_env", first)
	}
	other, err := m2.ClaimDeliveries(ctx, "m2", lease, 10)
	if err != nil || len(other) != 1 || other[0].ID == first.ID {
		t.Fatalf("m2 claims %+v, %v; want only the other one", other, err)
	}
	if more, err := m2.ClaimDeliveries(ctx, "m2", lease, 10); err != nil || len(more) != 0 {
		t.Errorf("a second claim while both are held: %+v, %v", more, err)
	}
	// m2 answers for the one it holds: not delivered, retry in 10s.
	retry := clk.Now().Add(10 * time.Second)
	if ok, err := m2.RecordAttempt(ctx, other[0].ID, "m2", Attempt{Status: 500, Error: "500 Internal Server Error", Next: retry}); err != nil || !ok {
		t.Fatalf("record a failed attempt: %v, %v", ok, err)
	}
	// m1 dies holding first: nobody may take it until its lease ends.
	clk.Set(clk.Now().Add(30 * time.Second))
	again, err := m2.ClaimDeliveries(ctx, "m2", lease, 10)
	if err != nil || len(again) != 1 || again[0].ID != other[0].ID || again[0].Attempts != 1 || again[0].LastStatus != 500 {
		t.Fatalf("after the retry is due m2 claims %+v, %v; want only its own retry", again, err)
	}
	if ok, err := m2.RecordAttempt(ctx, again[0].ID, "m2", Attempt{Delivered: true, Status: 204}); err != nil || !ok {
		t.Fatalf("record a delivery: %v, %v", ok, err)
	}
	clk.Set(clk.Now().Add(lease))
	taken, err := m2.ClaimDeliveries(ctx, "m2", lease, 10)
	if err != nil || len(taken) != 1 || taken[0].ID != first.ID {
		t.Fatalf("after m1's lease ended m2 claims %+v, %v; want m1's", taken, err)
	}
	// m1 comes back and reports its old attempt: it no longer holds it.
	if ok, err := m1.RecordAttempt(ctx, first.ID, "m1", Attempt{Delivered: true, Status: 200}); err != nil || ok {
		t.Errorf("an attempt of a member that lost the claim: %v, %v; want ignored", ok, err)
	}
	if ok, err := m2.RecordAttempt(ctx, first.ID, "m2", Attempt{Error: "connection refused"}); err != nil || !ok {
		t.Fatalf("record giving up: %v, %v", ok, err)
	}
	if _, ok, err := m1.NextDeliveryDue(ctx); err != nil || ok {
		t.Errorf("something still pending: %v, %v", ok, err)
	}

	all, err := m1.ListDeliveries(ctx, DeliveryFilter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %+v, %v", all, err)
	}
	states := map[string]NotifyDelivery{}
	for _, d := range all {
		states[d.ID] = d
	}
	if d := states[other[0].ID]; d.State != DeliveryDelivered || d.Attempts != 2 || d.DeliveredAt.IsZero() || d.LastStatus != 204 {
		t.Errorf("delivered one = %+v", d)
	}
	if d := states[first.ID]; d.State != DeliveryFailed || d.Attempts != 1 || d.LastError != "connection refused" || !d.DeliveredAt.IsZero() {
		t.Errorf("failed one = %+v", d)
	}
	failed, err := m1.ListDeliveries(ctx, DeliveryFilter{Failed: true})
	if err != nil || len(failed) != 1 || failed[0].ID != first.ID {
		t.Errorf("failed only = %+v, %v", failed, err)
	}
	counts, err := m1.DeliveryCounts(ctx)
	if diff := cmp.Diff(map[string]int{DeliveryPending: 0, DeliveryDelivered: 1, DeliveryFailed: 1}, counts); err != nil || diff != "" {
		t.Errorf("counts (-want +got):\n%s %v", diff, err)
	}
	if n, err := m1.PruneDeliveries(ctx, clk.Now().Add(time.Second)); err != nil || n != 2 {
		t.Errorf("prune = %d, %v; want both", n, err)
	}
}

// A daemon that stops mid-send lets its claims go, so the next one sends
// them at once instead of after the lease; a pending delivery outlives
// the store being closed and opened again.
func TestDeliveriesReleasedAndKept(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := testPath(t)
	ctx := t.Context()
	db, err := Open(ctx, path, Options{Now: clk.Now, Daemon: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	d := NotifyDelivery{ID: NewDeliveryID(), Event: "idle", Workflow: "team", Tag: "main", URL: "https://a.example/h", Body: "{}"}
	if _, err := db.AddDeliveries(ctx, []NotifyDelivery{d}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ClaimDeliveries(ctx, "m1", time.Hour, 10); err != nil || len(got) != 1 {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	if err := db.ReleaseDeliveries(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	next := openAt(t, path, Options{Now: clk.Now, Daemon: "m1"})
	got, err := next.ClaimDeliveries(ctx, "m1", time.Hour, 10)
	if err != nil || len(got) != 1 || got[0].ID != d.ID || got[0].Attempts != 0 {
		t.Errorf("after a restart: %+v, %v; want the released delivery", got, err)
	}
}
