package store

import (
	"context"
	"encoding/json"
	"time"

	"zombiezen.com/go/sqlite"
)

// NotifySub is one notify: subscription of a workflow:tag as its last good
// config defines it: the events POSTed to URL, signed with the secret in
// the daemon's environment variable SecretEnv ("" unsigned).
type NotifySub struct {
	URL       string
	Events    []string
	SecretEnv string
	// Line is where it is written in the workflow's file.
	Line int
}

// ReplaceNotifySubs makes subs the subscriptions of scope, in one
// transaction; none removes them all.
func (db *DB) ReplaceNotifySubs(ctx context.Context, scope Scope, subs []NotifySub) error {
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`DELETE FROM notify_subscriptions WHERE workflow = ? AND tag = ?`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}})
		if err != nil {
			return err
		}
		for i, s := range subs {
			events, err := json.Marshal(nonNil(s.Events))
			if err != nil {
				return err
			}
			err = conn.execute(`INSERT INTO notify_subscriptions (workflow, tag, idx, url, events_json, secret_env, line) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				&execOptions{Args: []any{scope.Workflow, scope.Tag, i, s.URL, string(events), s.SecretEnv, s.Line}})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ListNotifySubs returns the subscriptions of scope in file order.
func (db *DB) ListNotifySubs(ctx context.Context, scope Scope) ([]NotifySub, error) {
	var out []NotifySub
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT url, events_json, secret_env, line FROM notify_subscriptions WHERE workflow = ? AND tag = ? ORDER BY idx`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}, ResultFunc: func(s row) error {
				sub := NotifySub{URL: s.ColumnText(0), SecretEnv: s.ColumnText(2), Line: s.ColumnInt(3)}
				if err := json.Unmarshal([]byte(s.ColumnText(1)), &sub.Events); err != nil {
					return err
				}
				out = append(out, sub)
				return nil
			}})
	})
	return out, err
}

// Delivery states: pending until a POST is answered 2xx (delivered) or
// the notifier gives up on it (failed).
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// NotifyDelivery is one notification in the outbox: one event for one
// webhook, its signed body fixed when it was made.
type NotifyDelivery struct {
	// ID is "nd_" and 16 hex digits (NewDeliveryID); the receiver sees it
	// in X-Agent-Worker-Delivery and may drop a repeat by it.
	ID            string
	Event         string
	Workflow, Tag string // "" for a daemon-wide event (member_down)
	URL           string
	Body          string
	// SecretEnv names the daemon's environment variable whose value signs
	// the body, read at each attempt; "" sends it unsigned.
	SecretEnv string
	// Auth is how the request proves who sends it: "" signs the body with
	// the secret (a notify: webhook); AuthGitLab and AuthGitHub send the
	// secret as the API's token (a report).
	Auth        string
	State       string
	Attempts    int
	NextAt      time.Time
	LastError   string
	LastStatus  int // the HTTP status of the last attempt, 0 without one
	DeliveredAt time.Time
	CreatedAt   time.Time
}

// NewDeliveryID returns a fresh delivery id.
func NewDeliveryID() string { return newID("nd_") }

// The ways a delivery authenticates besides signing (NotifyDelivery.Auth).
const (
	AuthGitLab = "gitlab"
	AuthGitHub = "github"
)

const deliveryColumns = `id, event, workflow, tag, url, body, secret_env, state, attempts, next_at, last_error, last_status, delivered_at, created_at, auth`

func scanDelivery(s row) NotifyDelivery {
	d := NotifyDelivery{ID: s.ColumnText(0), Event: s.ColumnText(1), Workflow: s.ColumnText(2), Tag: s.ColumnText(3), URL: s.ColumnText(4),
		Body: s.ColumnText(5), SecretEnv: s.ColumnText(6), State: s.ColumnText(7), Attempts: s.ColumnInt(8), NextAt: fromMs(s.ColumnInt64(9)),
		LastError: s.ColumnText(10), LastStatus: s.ColumnInt(11), CreatedAt: fromMs(s.ColumnInt64(13)), Auth: s.ColumnText(14)}
	if ms := s.ColumnInt64(12); ms != 0 {
		d.DeliveredAt = fromMs(ms)
	}
	return d
}

// AddDeliveries puts ds in the outbox, pending and due now, in one
// transaction: the notifications of one event are kept all or none.
// Each must have its ID, Event, URL and Body; the rest is filled in.
func (db *DB) AddDeliveries(ctx context.Context, ds []NotifyDelivery) ([]NotifyDelivery, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	out := make([]NotifyDelivery, len(ds))
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		for i, d := range ds {
			d.State, d.Attempts, d.NextAt, d.CreatedAt = DeliveryPending, 0, fromMs(now), fromMs(now)
			err := insertDelivery(conn, d, now, "")
			if err != nil {
				return err
			}
			out[i] = d
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertDelivery writes d, pending and due at now; suffix may make the
// insert conditional (ON CONFLICT …).
func insertDelivery(conn querier, d NotifyDelivery, now int64, suffix string) error {
	return conn.execute(`INSERT INTO notify_deliveries (id, event, workflow, tag, url, body, secret_env, auth, state, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`+suffix,
		&execOptions{Args: []any{d.ID, d.Event, d.Workflow, d.Tag, d.URL, d.Body, d.SecretEnv, d.Auth, DeliveryPending, now, now}})
}

// ClaimDeliveries takes up to limit pending deliveries that are due for
// by (a daemon id) until lease from now, oldest due first. The claim is
// one conditional UPDATE in a write transaction, and writes are serialized
// on both engines (SQLite's one writer, the cluster-wide advisory lock on
// PostgreSQL), so two members never hold the same delivery at once; one
// that dies holding some lets them go when the lease ends.
func (db *DB) ClaimDeliveries(ctx context.Context, by string, lease time.Duration, limit int) ([]NotifyDelivery, error) {
	var out []NotifyDelivery
	err := db.write(ctx, func(conn querier) error {
		out = out[:0]
		now := db.nowMs()
		return conn.execute(`UPDATE notify_deliveries SET claimed_by = ?, lease_until = ?
			WHERE id IN (SELECT id FROM notify_deliveries WHERE state = ? AND next_at <= ? AND lease_until <= ? ORDER BY next_at, id LIMIT ? + 0)
			RETURNING `+deliveryColumns,
			&execOptions{Args: []any{by, now + lease.Milliseconds(), DeliveryPending, now, now, limit}, ResultFunc: func(s row) error {
				out = append(out, scanDelivery(s))
				return nil
			}})
	})
	return out, err
}

// Attempt is the outcome of one POST of a delivery.
type Attempt struct {
	// Delivered: the receiver answered 2xx.
	Delivered bool
	// Status is the HTTP status, 0 when none came back; Error says what
	// went wrong (a status line, a connection error).
	Status int
	Error  string
	// Next is when to try again; zero gives up (the delivery fails).
	Next time.Time
}

// RecordAttempt records an attempt by by at a delivery it claimed and
// lets the claim go: delivered, due again at a.Next, or failed. It
// reports false when by no longer held it (its lease ran out and another
// member took it): nothing is changed then.
func (db *DB) RecordAttempt(ctx context.Context, id, by string, a Attempt) (bool, error) {
	ok := false
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		state, next, delivered := DeliveryPending, a.Next.UnixMilli(), int64(0)
		switch {
		case a.Delivered:
			state, next, delivered = DeliveryDelivered, now, now
		case a.Next.IsZero():
			state, next = DeliveryFailed, now
		}
		err := conn.execute(`UPDATE notify_deliveries SET state = ?, attempts = attempts + 1, next_at = ?, last_error = ?, last_status = ?,
			delivered_at = ?, claimed_by = '', lease_until = 0 WHERE id = ? AND claimed_by = ? AND state = ?`,
			&execOptions{Args: []any{state, next, a.Error, a.Status, delivered, id, by, DeliveryPending}})
		ok = err == nil && conn.changes() > 0
		return err
	})
	return ok, err
}

// ReleaseDeliveries lets go of by's claims without an attempt (the daemon
// is stopping mid-send), so that the next daemon sends them at once.
func (db *DB) ReleaseDeliveries(ctx context.Context, by string) error {
	return db.write(ctx, func(conn querier) error {
		return conn.execute(`UPDATE notify_deliveries SET claimed_by = '', lease_until = 0 WHERE claimed_by = ? AND state = ?`,
			&execOptions{Args: []any{by, DeliveryPending}})
	})
}

// NextDeliveryDue is when the earliest pending delivery is due (or its
// lease ends), and false when none is pending.
func (db *DB) NextDeliveryDue(ctx context.Context) (time.Time, bool, error) {
	var at int64
	found := false
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(pick(conn,
			`SELECT min(max(next_at, lease_until)) FROM notify_deliveries WHERE state = ?`,
			`SELECT min(greatest(next_at, lease_until)) FROM notify_deliveries WHERE state = ?`),
			&execOptions{Args: []any{DeliveryPending}, ResultFunc: func(s row) error {
				if found = s.ColumnType(0) != sqlite.TypeNull; found { // NULL: no pending row
					at = s.ColumnInt64(0)
				}
				return nil
			}})
	})
	return fromMs(at), found, err
}

// DeliveryFilter narrows ListDeliveries: only failed ones, or only those
// of one workflow:tag (Scope); Limit caps them (0: 200).
type DeliveryFilter struct {
	Failed bool
	Scope  *Scope
	Limit  int
}

// ListDeliveries returns deliveries newest first.
func (db *DB) ListDeliveries(ctx context.Context, f DeliveryFilter) ([]NotifyDelivery, error) {
	where, args := "1 = 1", []any{}
	if f.Failed {
		where, args = where+" AND state = ?", append(args, DeliveryFailed)
	}
	if f.Scope != nil {
		where, args = where+" AND workflow = ? AND tag = ?", append(args, f.Scope.Workflow, f.Scope.Tag)
	}
	if f.Limit <= 0 {
		f.Limit = 200
	}
	args = append(args, f.Limit)
	out := []NotifyDelivery{}
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT `+deliveryColumns+` FROM notify_deliveries WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ? + 0`,
			&execOptions{Args: args, ResultFunc: func(s row) error {
				out = append(out, scanDelivery(s))
				return nil
			}})
	})
	return out, err
}

// DeliveryCounts returns how many deliveries are in each state, for the
// metrics.
func (db *DB) DeliveryCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{DeliveryPending: 0, DeliveryDelivered: 0, DeliveryFailed: 0}
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT state, count(*) FROM notify_deliveries GROUP BY state`,
			&execOptions{ResultFunc: func(s row) error {
				out[s.ColumnText(0)] = s.ColumnInt(1)
				return nil
			}})
	})
	return out, err
}

// PruneDeliveries forgets delivered and failed deliveries made before
// before, returning how many.
func (db *DB) PruneDeliveries(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`DELETE FROM notify_deliveries WHERE state <> ? AND created_at < ?`,
			&execOptions{Args: []any{DeliveryPending, before.UnixMilli()}})
		n = conn.changes()
		return err
	})
	return n, err
}

// nonNil makes a nil list an empty one, which JSON writes as [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
