package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Trigger is a webhook of a workflow:tag as its last good config defines
// it. Message has every variable filled in but ${{ body.PATH }}; Line is
// where the trigger is written in the workflow's file.
// Provider is workflow.HookProvider's word, Events the events it takes
// (none: all) and Report its report: as JSON ("" for none): the store
// keeps them as it is given them.
type Trigger struct {
	Workflow, Tag string
	Name          string
	SecretEnv     string
	Message       string
	Provider      string
	Events        []string
	Report        string
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
			events, err := json.Marshal(nonNil(t.Events))
			if err != nil {
				return err
			}
			err = conn.execute(`INSERT INTO triggers (workflow, tag, name, secret_env, message, provider, events_json, report_json, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (workflow, tag, name) DO UPDATE SET secret_env = excluded.secret_env, message = excluded.message,
				provider = excluded.provider, events_json = excluded.events_json, report_json = excluded.report_json, line = excluded.line`,
				&execOptions{Args: []any{scope.Workflow, scope.Tag, t.Name, t.SecretEnv, t.Message, t.Provider, string(events), t.Report, t.Line}})
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
		return conn.execute(`SELECT name, secret_env, message, line, provider, events_json, report_json FROM triggers WHERE workflow = ? AND tag = ? ORDER BY name`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}, ResultFunc: func(s row) error {
				t := Trigger{Workflow: scope.Workflow, Tag: scope.Tag, Name: s.ColumnText(0),
					SecretEnv: s.ColumnText(1), Message: s.ColumnText(2), Line: s.ColumnInt(3), Provider: s.ColumnText(4), Report: s.ColumnText(6)}
				if err := json.Unmarshal([]byte(s.ColumnText(5)), &t.Events); err != nil {
					return err
				}
				if len(t.Events) == 0 {
					t.Events = nil
				}
				out = append(out, t)
				return nil
			}})
	})
	return out, err
}

// Delivery is one webhook request to record with the message it posts.
// ID is the sender's delivery id; "" means the sender gave none, and the
// delivery is not remembered.
// Report, when set, arms a report (a PendingReport with it as its
// body) that the team's next idle posts.
type Delivery struct {
	Workflow, Tag, Trigger string
	ID                     string
	Report                 string
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
		if d.Report != "" {
			err := conn.execute(`INSERT INTO trigger_reports (id, workflow, tag, trigger, delivery_id, seq, report_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO NOTHING`,
				&execOptions{Args: []any{reportID(d), d.Workflow, d.Tag, d.Trigger, d.ID, msg.Seq, d.Report, now}})
			if err != nil {
				return err
			}
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

// PendingReport is a report a delivery armed and the team's idle has not
// posted yet. Report is what the delivery's trigger made of it (JSON).
type PendingReport struct {
	ID                     string
	Workflow, Tag, Trigger string
	DeliveryID             string
	// Seq is the message the delivery posted: what the team said after
	// it is the result.
	Seq       int64
	Report    string
	CreatedAt time.Time
}

// reportID names the report of d: the same for the same delivery id, so
// that its outbox delivery (ReportDeliveryID) is made once however often
// the report is fired; a fresh one when the sender gave no id.
func reportID(d Delivery) string {
	if d.ID == "" {
		return newID("rp_")
	}
	sum := sha256.Sum256([]byte(d.Workflow + "\x00" + d.Tag + "\x00" + d.Trigger + "\x00" + d.ID))
	return "rp_" + hex.EncodeToString(sum[:8])
}

// ReportDeliveryID is the outbox delivery id of the report reportID: one
// report is one notification.
func ReportDeliveryID(reportID string) string {
	sum := sha256.Sum256([]byte(reportID))
	return "nd_" + hex.EncodeToString(sum[:8])
}

// PendingReports are scope's armed reports, oldest first.
func (db *DB) PendingReports(ctx context.Context, scope Scope) ([]PendingReport, error) {
	var out []PendingReport
	err := db.read(ctx, func(conn querier) error {
		out = out[:0]
		return conn.execute(`SELECT id, trigger, delivery_id, report_json, created_at, seq FROM trigger_reports WHERE workflow = ? AND tag = ? ORDER BY created_at, id`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}, ResultFunc: func(s row) error {
				out = append(out, PendingReport{ID: s.ColumnText(0), Workflow: scope.Workflow, Tag: scope.Tag, Trigger: s.ColumnText(1),
					DeliveryID: s.ColumnText(2), Report: s.ColumnText(3), CreatedAt: fromMs(s.ColumnInt64(4)), Seq: s.ColumnInt64(5)})
				return nil
			}})
	})
	return out, err
}

// FireReport moves the pending report id into the outbox as d (whose ID
// is set to ReportDeliveryID(id)), in one transaction: the report is
// posted once even when two members fire it together, or one fires it
// again after a crash. It reports false, writing nothing, when the report
// is no longer pending.
func (db *DB) FireReport(ctx context.Context, id string, d NotifyDelivery) (NotifyDelivery, bool, error) {
	d.ID = ReportDeliveryID(id)
	fired := false
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`DELETE FROM trigger_reports WHERE id = ?`, &execOptions{Args: []any{id}})
		if err != nil || conn.changes() == 0 {
			return err
		}
		now := db.nowMs()
		if err := insertDelivery(conn, d, now, ` ON CONFLICT (id) DO NOTHING`); err != nil {
			return err
		}
		fired = conn.changes() > 0
		d.State, d.NextAt, d.CreatedAt = DeliveryPending, fromMs(now), fromMs(now)
		return nil
	})
	return d, fired, err
}
