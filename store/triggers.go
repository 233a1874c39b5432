package store

import (
	"context"
	"encoding/json"
	"time"
)

// Trigger is a webhook of a workflow:tag as its last good config defines
// it. Message has every variable filled in but ${{ body.PATH }}; Line is
// where the trigger is written in the workflow's file.
type Trigger struct {
	Workflow, Tag string
	Name          string
	SecretEnv     string
	Message       string
	Line          int
}

// DeliveryMemory is how long a webhook's delivery id is remembered: a
// sender that delivers the same event again within it (GitHub's redelivery,
// a retry after a timeout) posts nothing the second time.
const DeliveryMemory = 24 * time.Hour

// ReplaceTriggers makes ts the triggers of scope, in one transaction.
// Triggers are upserted, not deleted and rewritten, so nothing that refers
// to one by name is lost when an edit leaves it in place.
func (db *DB) ReplaceTriggers(ctx context.Context, scope Scope, ts []Trigger) error {
	return db.write(ctx, func(conn querier) error {
		keep := make([]string, 0, len(ts))
		for _, t := range ts {
			keep = append(keep, t.Name)
			err := conn.execute(`INSERT INTO triggers (workflow, tag, name, secret_env, message, line) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (workflow, tag, name) DO UPDATE SET secret_env = excluded.secret_env, message = excluded.message, line = excluded.line`,
				&execOptions{Args: []any{scope.Workflow, scope.Tag, t.Name, t.SecretEnv, t.Message, t.Line}})
			if err != nil {
				return err
			}
		}
		// Everything of the scope not upserted above goes.
		names, err := json.Marshal(keep)
		if err != nil {
			return err
		}
		return conn.execute(pick(conn, `DELETE FROM triggers WHERE workflow = ? AND tag = ?
			AND name NOT IN (SELECT value FROM json_each(?))`, `DELETE FROM triggers WHERE workflow = ? AND tag = ?
			AND name NOT IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))`),
			&execOptions{Args: []any{scope.Workflow, scope.Tag, string(names)}})
	})
}

// ListTriggers returns the triggers of scope by name.
func (db *DB) ListTriggers(ctx context.Context, scope Scope) ([]Trigger, error) {
	var out []Trigger
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT name, secret_env, message, line FROM triggers WHERE workflow = ? AND tag = ? ORDER BY name`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}, ResultFunc: func(s row) error {
				out = append(out, Trigger{Workflow: scope.Workflow, Tag: scope.Tag, Name: s.ColumnText(0),
					SecretEnv: s.ColumnText(1), Message: s.ColumnText(2), Line: s.ColumnInt(3)})
				return nil
			}})
	})
	return out, err
}

// Delivery is one webhook request to record with the message it posts.
// ID is the sender's delivery id; "" means the sender gave none, and the
// delivery is not remembered.
type Delivery struct {
	Workflow, Tag, Trigger string
	ID                     string
}

// PostDelivery writes m unless d's id was seen for the same trigger within
// DeliveryMemory, and remembers the id, in one transaction: a delivery is
// either posted and remembered or neither, so two concurrent deliveries
// of one id post once. For a repeat it returns the seq of the message the
// first delivery posted and duplicate true. Ids older than DeliveryMemory
// are forgotten on the way.
func (db *DB) PostDelivery(ctx context.Context, d Delivery, m NewMessage) (msg Message, duplicate bool, err error) {
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`DELETE FROM webhook_deliveries WHERE received_at <= ?`,
			&execOptions{Args: []any{now - DeliveryMemory.Milliseconds()}})
		if err != nil {
			return err
		}
		if d.ID != "" {
			err := conn.execute(`SELECT seq FROM webhook_deliveries WHERE workflow = ? AND tag = ? AND trigger = ? AND delivery_id = ?`,
				&execOptions{Args: []any{d.Workflow, d.Tag, d.Trigger, d.ID}, ResultFunc: func(s row) error {
					duplicate, msg.Seq = true, s.ColumnInt64(0)
					return nil
				}})
			if err != nil || duplicate {
				return err
			}
		}
		if msg, err = appendMessage(conn, m, now); err != nil {
			return err
		}
		if d.ID == "" {
			return nil
		}
		return conn.execute(`INSERT INTO webhook_deliveries (workflow, tag, trigger, delivery_id, seq, received_at) VALUES (?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{d.Workflow, d.Tag, d.Trigger, d.ID, msg.Seq, now}})
	})
	if err != nil {
		return Message{}, false, err
	}
	return msg, duplicate, nil
}
