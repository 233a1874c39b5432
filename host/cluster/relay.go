package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// channel is the LISTEN/NOTIFY channel the members share.
const channel = "agent_worker_events"

// maxPayload keeps a notification under PostgreSQL's 8000-byte limit.
const maxPayload = 7900

// wireEvent is a team event as it crosses to the other members. A
// message travels whole when it fits in a notification (most do), else as
// its seq, and the receiver reads it from the store, where it is committed
// already.
type wireEvent struct {
	From    string         `json:"f"`
	Kind    string         `json:"k"`
	Agent   store.AgentKey `json:"a"`
	Seq     int64          `json:"s,omitempty"`
	Run     *team.RunInfo  `json:"r,omitempty"`
	Tool    *team.ToolInfo `json:"t,omitempty"`
	State   string         `json:"st,omitempty"`
	Error   string         `json:"e,omitempty"`
	Message *store.Scope   `json:"m,omitempty"`
	Whole   *store.Message `json:"w,omitempty"`
}

// relay carries the team events of this member to the others and theirs
// to this member's bus, marked Remote so that they go no further.
type relay struct {
	m   *Member
	sub *team.Subscription
}

func newRelay(m *Member) *relay {
	// Subscribed before Run returns to the daemon, so no event published
	// from then on is missed.
	return &relay{m: m, sub: m.cfg.Bus.Subscribe(4096)}
}

// send notifies the other members of each event published here.
func (r *relay) send(ctx context.Context) {
	defer func() { r.sub.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sub.Dropped():
			r.m.cfg.Log.Warn("cluster relay fell behind the event bus; some events did not reach the other members")
			r.sub = r.m.cfg.Bus.Subscribe(4096)
		case ev := <-r.sub.C:
			if ev.Remote || ev.Kind == team.EventWorktree {
				continue
			}
			w := wireEvent{From: r.m.cfg.ID, Kind: ev.Kind, Agent: ev.Agent, Run: ev.Run, Tool: ev.Tool, State: ev.State, Error: ev.Error}
			if ev.Message != nil {
				w.Whole = ev.Message
			}
			b, err := json.Marshal(w)
			if err == nil && len(b) > maxPayload && w.Whole != nil {
				w.Whole = nil
				w.Seq, w.Message = ev.Message.Seq, &store.Scope{Workflow: ev.Message.Workflow, Tag: ev.Message.Tag}
				b, err = json.Marshal(w)
			}
			if err == nil && len(b) > maxPayload && w.Tool != nil {
				w.Tool = &team.ToolInfo{Name: w.Tool.Name} // a tool call's arguments can be long
				b, err = json.Marshal(w)
			}
			if err != nil || len(b) > maxPayload {
				continue
			}
			if _, err := r.m.pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, string(b)); err != nil && ctx.Err() == nil {
				r.m.cfg.Log.Warn("notify the other members", "error", err)
			}
		}
	}
}

// listen publishes the other members' events on this member's bus. A lost
// connection is opened again; clients of the event streams resume from the
// last seq they saw, so a gap costs them nothing but a re-read.
func (r *relay) listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.listenOnce(ctx); err != nil && ctx.Err() == nil {
			r.m.cfg.Log.Warn("listen for the other members' events", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (r *relay) listenOnce(ctx context.Context) error {
	conn, err := r.m.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+channel) //nolint:errcheck // the connection goes back to the pool either way
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var w wireEvent
		if json.Unmarshal([]byte(n.Payload), &w) != nil || w.From == r.m.cfg.ID {
			continue
		}
		ev := team.Event{Kind: w.Kind, Agent: w.Agent, Run: w.Run, Tool: w.Tool, State: w.State, Error: w.Error, Remote: true, Message: w.Whole}
		if w.Whole == nil && w.Message != nil {
			ms, err := r.m.cfg.DB.ReadChannel(ctx, *w.Message, store.ReadOptions{SinceSeq: w.Seq - 1, Limit: 1})
			if err != nil || len(ms) == 0 || ms[0].Seq != w.Seq {
				continue
			}
			ev.Message = &ms[0]
		}
		r.m.cfg.Bus.Publish(ev)
	}
}
