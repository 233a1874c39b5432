package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// member is one side of a relay test: a store of its own on the shared
// database, a bus, and the relay between them, running until the test
// ends.
type member struct {
	db  *store.DB
	bus *team.Bus
	r   *relay
	// start starts the relay's sending half (its listening half runs at
	// once): events published before are sent as one batch.
	start func()
}

func newMember(t *testing.T, dsn, id string) *member {
	t.Helper()
	db, err := store.Open(t.Context(), dsn, store.Options{Daemon: id, PoolSize: 4})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	m := &member{db: db, bus: &team.Bus{}}
	m.r = startRelay(id, db.PostgresPool(), db, m.bus, hclog.NewNullLogger())
	m.r.keepalive = 50 * time.Millisecond // the silent connection's check runs in every test
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { m.r.listen(ctx); done <- struct{}{} }()
	sending := false
	m.start = func() {
		sending = true
		go func() { m.r.send(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		<-done
		if sending {
			<-done
		}
		db.Close()
	})
	select {
	case <-m.r.up:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not start listening within 10 s")
	}
	return m
}

// marker is the event a test publishes last on the sending member: the
// relay keeps order, so everything sent before it has arrived with it.
var marker = team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: "global", Tag: "main"}, State: "test-marker"}

// collect gathers the events relayed to bus until the marker arrives.
func collect(t *testing.T, bus *team.Bus) func() []team.Event {
	sub := bus.Subscribe(4096)
	return func() []team.Event {
		t.Helper()
		defer sub.Close()
		var got []team.Event
		deadline := time.After(10 * time.Second)
		for {
			select {
			case ev := <-sub.C:
				if ev.Kind == marker.Kind && ev.State == marker.State {
					return got
				}
				got = append(got, ev)
			case <-deadline:
				t.Fatalf("the marker did not arrive within 10 s; got %d events", len(got))
			}
		}
	}
}

// waitFor waits until cond holds, looking again at each of the
// relay's notifications (at most every millisecond), for 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond) // polling a counter another goroutine moves
	}
}

// announce publishes what team.Service.Announce publishes for each message.
func announce(bus *team.Bus, ms []store.Message) {
	for i := range ms {
		bus.Publish(team.Event{Kind: team.EventMessage, Message: &ms[i]})
		for _, r := range ms[i].Recipients {
			bus.Publish(team.Event{Kind: team.EventWake, Agent: store.AgentKey{Name: r, Workflow: ms[i].Workflow, Tag: ms[i].Tag}})
		}
	}
}

// The messages of one commit reach another member in a few notifications
// (as many as their bytes need, not one each), each exactly once, in
// order, whole, with their wake-ups; the sender does not hear itself.
func TestRelayBatchesTheMessagesOfOneCommit(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := newMember(t, dsn, "member-a"), newMember(t, dsn, "member-b")
	const n = 200
	news := make([]store.NewMessage, n)
	for i := range news {
		news[i] = store.NewMessage{Workflow: "global", Tag: "main", Sender: "user", Content: fmt.Sprintf("@bob message %d", i)}
	}
	ms, err := a.db.AppendMessages(t.Context(), news)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Recipients = []string{"bob"} // as Compose would resolve the mention
	}
	onB := collect(t, b.bus)
	announce(a.bus, ms)
	carol := store.AgentKey{Name: "carol", Workflow: "global", Tag: "main"}
	a.bus.Publish(team.Event{Kind: team.EventWake, Agent: carol}) // a wake-up of no message (a recovery's)
	a.bus.Publish(marker)
	a.start()
	got := onB()
	var seqs []int64
	var wakes []store.AgentKey
	for _, ev := range got {
		if !ev.Remote {
			t.Errorf("relayed event %+v is not marked Remote", ev)
		}
		switch ev.Kind {
		case team.EventMessage:
			seqs = append(seqs, ev.Message.Seq)
			if want := ms[len(seqs)-1]; ev.Message.Content != want.Content || ev.Message.ID != want.ID ||
				!ev.Message.CreatedAt.Equal(want.CreatedAt) || !cmp.Equal(ev.Message.Recipients, want.Recipients) {
				t.Errorf("message %d arrived as %+v, want %+v", len(seqs), *ev.Message, want)
			}
		case team.EventWake:
			wakes = append(wakes, ev.Agent)
		}
	}
	want := make([]int64, n)
	for i := range ms {
		want[i] = ms[i].Seq
	}
	if diff := cmp.Diff(want, seqs); diff != "" {
		t.Errorf("messages on the other member (-sent +relayed):\n%s", diff)
	}
	// The messages' wake-ups travel as their recipients (the scheduler
	// wakes them from the message); another wake-up travels as itself.
	if diff := cmp.Diff([]store.AgentKey{carol}, wakes); diff != "" {
		t.Errorf("wake-ups relayed (-want +got):\n%s", diff)
	}
	// The marker came in the last notification; the sender counts it
	// once its NOTIFY returned, and hears it back.
	waitFor(t, "the sender counts what the other member received and hears it back", func() bool {
		return a.r.sent.Load() == b.r.received.Load() && a.r.own.Load() == a.r.sent.Load()
	})
	sent := a.r.sent.Load()
	t.Logf("%d events in %d notifications", 2*n+1, sent)
	if sent > n/20 {
		t.Errorf("%d events went out in %d notifications: not batched", 2*n+1, sent)
	}
	if b.r.reread.Load() != 0 {
		t.Errorf("the other member read %d messages back; they all travelled whole", b.r.reread.Load())
	}
	if n := a.r.received.Load() + a.r.published.Load(); n != 0 {
		t.Errorf("the sender took %d of its own notifications or events for another member's", n)
	}
}

// A message too long for a notification travels as its seq and is read
// back from the store, once for all such messages of a batch; the short
// ones around it still travel whole, and the order holds.
func TestRelayReadsBackOnlyWhatDoesNotFit(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := newMember(t, dsn, "member-a"), newMember(t, dsn, "member-b")
	long := strings.Repeat("x", 2*maxPayload)
	news := []store.NewMessage{
		{Workflow: "global", Tag: "main", Sender: "user", Content: "short 1"},
		{Workflow: "global", Tag: "main", Sender: "user", Content: "long 1 " + long},
		{Workflow: "global", Tag: "main", Sender: "user", Content: "short 2"},
		{Workflow: "global", Tag: "main", Sender: "user", Content: "long 2 " + long},
	}
	ms, err := a.db.AppendMessages(t.Context(), news)
	if err != nil {
		t.Fatal(err)
	}
	onB := collect(t, b.bus)
	announce(a.bus, ms)
	a.bus.Publish(marker)
	a.start()
	var got []string
	for _, ev := range onB() {
		if ev.Kind == team.EventMessage {
			got = append(got, ev.Message.Content)
		}
	}
	want := []string{"short 1", "long 1 " + long, "short 2", "long 2 " + long}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages on the other member (-sent +relayed):\n%s", diff)
	}
	if n := b.r.reread.Load(); n != 2 {
		t.Errorf("%d messages read back, want the 2 long ones", n)
	}
	waitFor(t, "the sender counts what the other member received", func() bool { return a.r.sent.Load() == b.r.received.Load() })
	if n := a.r.sent.Load(); n != 1 {
		t.Errorf("%d notifications for one batch of 4 messages (2 as seqs), want 1", n)
	}
}

// A member keeps teams in memory while it hears the others' changes, and
// a change made through another member (here an agent added, and a
// workflow's long-message setting) reaches it through the store's
// triggers; once it stops listening, it keeps nothing.
func TestRelayTellsTheStoreOfAnotherMembersConfigChange(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := newMember(t, dsn, "member-a"), newMember(t, dsn, "member-b")
	ctx := t.Context()
	scope := store.Scope{Workflow: "team", Tag: "main"}
	if _, ok := b.db.ConfigGeneration(); !ok {
		t.Fatal("a listening member may not keep agents' definitions")
	}
	// heard waits until b has heard of a change made after it read gen.
	heard := func(what string, gen uint64) {
		t.Helper()
		waitFor(t, "the other member hears "+what, func() bool { now, _ := b.db.ConfigGeneration(); return now != gen })
	}
	members := func() store.Members {
		m, err := b.db.Members(ctx, scope)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	gen, _ := b.db.ConfigGeneration()
	if _, err := a.db.CreateAgent(ctx, store.Agent{Name: "alice", Workflow: scope.Workflow, Tag: scope.Tag, Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	heard("alice's creation", gen)
	if got := members().Names; !cmp.Equal(got, []string{"alice"}) { // kept from now on
		t.Fatalf("team on the other member: %v, want [alice]", got)
	}
	gen, _ = b.db.ConfigGeneration()
	if _, err := a.db.CreateAgent(ctx, store.Agent{Name: "bob", Workflow: scope.Workflow, Tag: scope.Tag, Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	heard("bob's creation", gen)
	if got := members().Names; !cmp.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("team on the other member after bob joined through the first: %v", got)
	}
	w, err := a.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		t.Fatal(err)
	}
	w.LongMessageChars = 1234
	gen, _ = b.db.ConfigGeneration()
	if _, err := a.db.SaveWorkflow(ctx, w); err != nil {
		t.Fatal(err)
	}
	heard("the workflow's new long-message setting", gen)
	if got := members().LongMessageChars; got != 1234 {
		t.Errorf("long-message setting on the other member: %d, want 1234", got)
	}
	// A member's own runs and messages move agents' and workflows' state
	// all the time; they tell no one.
	before := b.r.received.Load()
	if err := a.db.SetAgentState(ctx, store.AgentKey{Name: "alice", Workflow: scope.Workflow, Tag: scope.Tag}, api.AgentPaused, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.AppendMessage(ctx, store.NewMessage{Workflow: scope.Workflow, Tag: scope.Tag, Sender: "user", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	a.bus.Publish(marker)
	onB := collect(t, b.bus)
	a.start()
	onB()
	if n := b.r.received.Load() - before; n != 1 {
		t.Errorf("%d notifications for a state change, a message and the marker; want only the marker's", n)
	}
}

// A member that stops listening keeps nothing it could not hear change.
func TestStoreKeepsNoTeamWithoutListening(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, err := store.Open(t.Context(), dsn, store.Options{Daemon: "alone", PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, ok := db.ConfigGeneration(); ok {
		t.Error("a cluster member that does not listen may keep agents' definitions")
	}
	db.HearConfigChanges(true)
	if _, ok := db.ConfigGeneration(); !ok {
		t.Error("a listening member may not keep agents' definitions")
	}
	db.HearConfigChanges(false)
	if _, ok := db.ConfigGeneration(); ok {
		t.Error("a member that stopped listening may still keep agents' definitions")
	}
}

// BenchmarkRelayDecode is a member's cost of taking one notification of
// another member's channel_send (its message and its mention's wake-up).
func BenchmarkRelayDecode(b *testing.B) {
	r := &relay{self: `{"f":"member-b",`, bus: &team.Bus{}}
	w := &relay{self: `{"f":"member-a",`}
	m := store.Message{Seq: 123456, ID: "msg_0123456789abcdef", Workflow: "bench", Tag: "main", Sender: "s3", Content: "@s4 ping",
		Kind: store.KindMessage, Recipients: []string{"s4"}, CreatedAt: time.Now()}
	p := w.payloads([]team.Event{{Kind: team.EventMessage, Message: &m}, {Kind: team.EventWake, Agent: store.AgentKey{Name: "s4", Workflow: "bench", Tag: "main"}}})[0]
	b.Logf("payload: %d bytes", len(p))
	b.ReportAllocs()
	for b.Loop() {
		var batch notification
		if err := json.Unmarshal([]byte(p), &batch); err != nil {
			b.Fatal(err)
		}
		r.deliver(context.Background(), batch.Events)
	}
}
