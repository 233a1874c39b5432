package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// channel is the LISTEN/NOTIFY channel the members share.
const channel = "agent_worker_events"

// maxPayload keeps a notification under PostgreSQL's 8000-byte limit.
const maxPayload = 7900

// keepalive is how long the listening connection may stay silent before
// the relay proves it alive: a connection that died without a word would
// otherwise leave the member keeping teams no one tells it have changed.
const keepalive = 5 * time.Second

// maxBatch bounds the events the relay takes off the bus before it
// notifies, so that one notification's wait does not grow without end.
const maxBatch = 512

// notification is what one NOTIFY carries: the events a member published
// since its previous notification, in order. The payload starts with the
// member's id, so that a member tells its own notifications from the
// others' without parsing them.
type notification struct {
	From   string      `json:"f"`
	Events []wireEvent `json:"e"`
	// Config comes alone, from the store's triggers (PostgreSQL migration
	// 0009): agents or workflows changed, on whichever member.
	Config bool `json:"c,omitempty"`
}

// wireEvent is a team event as it crosses to the other members. A message
// travels whole when it fits in a notification (most do: a long one is a
// stub pointing at its resource), else as its seq, and the receiver reads
// it from the store, where it is committed already.
type wireEvent struct {
	Kind    string         `json:"k"`
	Agent   store.AgentKey `json:"a,omitzero"`
	Seq     int64          `json:"s,omitempty"`
	Run     *team.RunInfo  `json:"r,omitempty"`
	Tool    *team.ToolInfo `json:"t,omitempty"`
	State   string         `json:"st,omitempty"`
	Error   string         `json:"e,omitempty"`
	Message *store.Scope   `json:"m,omitempty"`
	Whole   *wireMessage   `json:"w,omitempty"`
}

// wireMessage is a message with short keys: a notification holds more of
// them.
type wireMessage struct {
	Seq        int64    `json:"s"`
	ID         string   `json:"i"`
	Workflow   string   `json:"w"`
	Tag        string   `json:"g"`
	Sender     string   `json:"f"`
	Content    string   `json:"c"`
	Kind       string   `json:"k,omitempty"`
	To         string   `json:"o,omitempty"`
	Recipients []string `json:"r,omitempty"`
	ResourceID string   `json:"x,omitempty"`
	CreatedAt  int64    `json:"t"` // Unix milliseconds, as the store keeps it
	LoopGuard  bool     `json:"l,omitempty"`
}

func toWire(m *store.Message) *wireMessage {
	return &wireMessage{Seq: m.Seq, ID: m.ID, Workflow: m.Workflow, Tag: m.Tag, Sender: m.Sender, Content: m.Content,
		Kind: m.Kind, To: m.To, Recipients: m.Recipients, ResourceID: m.ResourceID, CreatedAt: m.CreatedAt.UnixMilli(),
		LoopGuard: m.LoopGuardTripped}
}

func (w *wireMessage) message() *store.Message {
	return &store.Message{Seq: w.Seq, ID: w.ID, Workflow: w.Workflow, Tag: w.Tag, Sender: w.Sender, Content: w.Content,
		Kind: w.Kind, To: w.To, Recipients: w.Recipients, ResourceID: w.ResourceID, CreatedAt: time.UnixMilli(w.CreatedAt),
		LoopGuardTripped: w.LoopGuard}
}

// relay carries the team events of this member to the others and theirs
// to this member's bus, marked Remote so that they go no further.
//
// Events travel in batches: the sender takes every event queued on its
// subscription (those of one commit of the store's writer, and whatever
// else came meanwhile) and sends them in as few notifications as fit,
// usually one; the receiver publishes a notification's events in order
// and reads the messages that travelled as seqs with one read per
// workflow:tag. A member under load thus pays one NOTIFY, one wake-up of
// the listening connection and one parse for many events, not one each.
type relay struct {
	id   string
	pool *pgxpool.Pool
	db   *store.DB
	bus  *team.Bus
	log  hclog.Logger
	sub  *team.Subscription
	// self starts every payload this member sends.
	self string
	// up is closed once the member first listens: from then on it hears
	// every notification.
	up     chan struct{}
	upOnce sync.Once
	// keepalive is the package's, shorter in tests.
	keepalive time.Duration

	// Counters for tests: notifications sent, received from others and
	// heard back from this member (skipped unparsed), events published
	// here, messages read back.
	sent, received, own, published, reread atomic.Int64
}

func newRelay(m *Member) *relay {
	return startRelay(m.cfg.ID, m.pool, m.cfg.DB, m.cfg.Bus, m.cfg.Log)
}

// startRelay subscribes to bus before it returns, so that no event
// published from then on is missed; send and listen do the work.
func startRelay(id string, pool *pgxpool.Pool, db *store.DB, bus *team.Bus, log hclog.Logger) *relay {
	from, _ := json.Marshal(id)
	return &relay{id: id, pool: pool, db: db, bus: bus, log: log, sub: bus.Subscribe(4096),
		self: `{"f":` + string(from) + `,`, up: make(chan struct{}), keepalive: keepalive}
}

// send notifies the other members of the events published here, a batch
// at a time.
func (r *relay) send(ctx context.Context) {
	defer func() { r.sub.Close() }()
	batch := make([]team.Event, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case <-r.sub.Dropped():
			r.log.Warn("cluster relay fell behind the event bus; some events did not reach the other members")
			r.sub = r.bus.Subscribe(4096)
			continue
		case ev := <-r.sub.C:
			batch = append(batch, ev)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case ev := <-r.sub.C:
				batch = append(batch, ev)
			default:
				break more
			}
		}
		for _, p := range r.payloads(batch) {
			if _, err := r.pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, p); err != nil {
				if ctx.Err() == nil {
					r.log.Warn("notify the other members", "error", err)
				}
				continue
			}
			r.sent.Add(1)
		}
	}
}

// payloads packs the events to relay into notifications, in order, each
// under maxPayload. A message too long to travel whole goes as its seq;
// a tool call's arguments are dropped if they do not fit; the wake-ups of
// a message's recipients are left out after it.
func (r *relay) payloads(evs []team.Event) []string {
	var out []string
	var b strings.Builder
	n := 0 // events in b
	flush := func() {
		if n > 0 {
			b.WriteString("]}")
			out = append(out, b.String())
		}
		b.Reset()
		n = 0
	}
	room := maxPayload - len(r.self) - len(`"e":[]}`)
	// woken are the recipients of the batch's messages so far: their
	// wake-ups follow the message, and a relayed message stands for them
	// (the scheduler wakes a recipient from it).
	var woken map[store.AgentKey]bool
	for _, ev := range evs {
		if ev.Remote || ev.Kind == team.EventWorktree || (ev.Kind == team.EventWake && woken[ev.Agent]) {
			continue
		}
		if m := ev.Message; m != nil {
			for _, name := range m.Recipients {
				if woken == nil {
					woken = map[store.AgentKey]bool{}
				}
				woken[store.AgentKey{Name: name, Workflow: m.Workflow, Tag: m.Tag}] = name != m.Sender
			}
		}
		e, ok := encodeEvent(ev, room)
		if !ok {
			continue
		}
		if n > 0 && b.Len()+1+len(e)+2 > maxPayload {
			flush()
		}
		if n == 0 {
			b.WriteString(r.self)
			b.WriteString(`"e":[`)
		} else {
			b.WriteByte(',')
		}
		b.Write(e)
		n++
	}
	flush()
	return out
}

// encodeEvent is ev's JSON in at most room bytes, or false when even its
// shortest form does not fit.
func encodeEvent(ev team.Event, room int) ([]byte, bool) {
	w := wireEvent{Kind: ev.Kind, Agent: ev.Agent, Run: ev.Run, Tool: ev.Tool, State: ev.State, Error: ev.Error}
	if ev.Message != nil {
		w.Whole = toWire(ev.Message)
	}
	b, err := json.Marshal(w)
	if err == nil && len(b) > room && w.Whole != nil {
		w.Whole = nil
		w.Seq, w.Message = ev.Message.Seq, &store.Scope{Workflow: ev.Message.Workflow, Tag: ev.Message.Tag}
		b, err = json.Marshal(w)
	}
	if err == nil && len(b) > room && w.Tool != nil {
		w.Tool = &team.ToolInfo{Name: w.Tool.Name} // a tool call's arguments can be long
		b, err = json.Marshal(w)
	}
	return b, err == nil && len(b) <= room
}

// listen publishes the other members' events on this member's bus. A lost
// connection is opened again; clients of the event streams resume from the
// last seq they saw, so a gap costs them nothing but a re-read.
func (r *relay) listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.listenOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("listen for the other members' events", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (r *relay) listenOnce(ctx context.Context) (err error) {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			// Broken or in doubt: never hand it back to the pool.
			conn.Conn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // it is gone either way
		} else {
			conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+channel) //nolint:errcheck // the connection goes back to the pool either way
		}
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	// From here on every change of agents and workflows is heard, until
	// this connection is given up.
	r.db.HearConfigChanges(true)
	defer r.db.HearConfigChanges(false)
	r.upOnce.Do(func() { close(r.up) })
	for {
		wait, cancel := context.WithTimeout(ctx, r.keepalive)
		n, err := conn.Conn().WaitForNotification(wait)
		cancel()
		if err != nil {
			if ctx.Err() != nil || wait.Err() == nil {
				return err
			}
			// Silent for a while: make sure the connection still is one.
			ping, cancel := context.WithTimeout(ctx, r.keepalive)
			err = conn.Ping(ping)
			cancel()
			if err != nil {
				return fmt.Errorf("the listening connection does not answer: %w", err)
			}
			continue
		}
		if strings.HasPrefix(n.Payload, r.self) {
			r.own.Add(1)
			continue
		}
		var batch notification
		if json.Unmarshal([]byte(n.Payload), &batch) != nil {
			continue
		}
		r.received.Add(1)
		if batch.Config {
			r.db.ConfigChangedElsewhere()
		}
		r.deliver(ctx, batch.Events)
	}
}

// deliver publishes one notification's events on this member's bus, in
// order, after reading the messages that travelled as seqs: one read per
// workflow:tag, from the first such seq to the last.
func (r *relay) deliver(ctx context.Context, evs []wireEvent) {
	var read map[int64]*store.Message
	for i := range evs {
		w := &evs[i]
		if w.Whole != nil || w.Message == nil || read[w.Seq] != nil {
			continue
		}
		if read == nil {
			read = map[int64]*store.Message{}
		}
		r.readBack(ctx, *w.Message, evs[i:], read)
	}
	for i := range evs {
		w := &evs[i]
		ev := team.Event{Kind: w.Kind, Agent: w.Agent, Run: w.Run, Tool: w.Tool, State: w.State, Error: w.Error, Remote: true}
		switch {
		case w.Whole != nil:
			ev.Message = w.Whole.message()
		case w.Message != nil:
			if ev.Message = read[w.Seq]; ev.Message == nil {
				continue // gone (its workflow was deleted since)
			}
		}
		r.bus.Publish(ev)
		r.published.Add(1)
	}
}

// readBack reads the messages of scope that evs carry as seqs, with one
// read from the first to the last, into read.
func (r *relay) readBack(ctx context.Context, scope store.Scope, evs []wireEvent, read map[int64]*store.Message) {
	var seqs []int64
	for _, w := range evs {
		if w.Whole == nil && w.Message != nil && *w.Message == scope {
			seqs = append(seqs, w.Seq)
		}
	}
	lo, hi := slices.Min(seqs), slices.Max(seqs)
	for since := lo - 1; since < hi; {
		ms, err := r.db.ReadChannel(ctx, scope, store.ReadOptions{SinceSeq: since, Limit: int(min(hi-since, 1000))})
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("read relayed messages", "workflow", scope.String(), "error", err)
			}
			return
		}
		for i := range ms {
			if slices.Contains(seqs, ms[i].Seq) {
				read[ms[i].Seq] = &ms[i]
				r.reread.Add(1)
			}
		}
		if len(ms) == 0 || ms[len(ms)-1].Seq >= hi {
			return
		}
		since = ms[len(ms)-1].Seq
	}
}
