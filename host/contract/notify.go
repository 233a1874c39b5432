package contract

import "time"

// Headers of a notification the daemon POSTs to a notify: webhook.
const (
	// HeaderNotifySignature carries "sha256=" and the hex HMAC-SHA256 of
	// the raw body keyed with the value of the subscription's secret_env;
	// it is absent when the subscription names none.
	HeaderNotifySignature = "X-Agent-Worker-Signature-256"
	// HeaderNotifyDelivery is the delivery's id, the same at every
	// attempt: a receiver that saw it already may drop the repeat.
	HeaderNotifyDelivery = "X-Agent-Worker-Delivery"
	// HeaderNotifyEvent is the event: question, approval, run_failed,
	// over_budget, loop_guard, idle, member_down or test.
	HeaderNotifyEvent = "X-Agent-Worker-Event"
)

// NotificationBody is the JSON a notification carries. Text is one human
// line, so that a chat's incoming webhook (Slack, Mattermost) shows it as
// is; the rest is for programs.
type NotificationBody struct {
	Text     string `json:"text"`
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	Workflow string `json:"workflow,omitempty"`
	Tag      string `json:"tag,omitempty"`
	Agent    string `json:"agent,omitempty"`
	// Target is the agent (alice@review:pr-1) or workflow (@review:pr-1)
	// the event is about, as the CLI takes it.
	Target string `json:"target,omitempty"`
	// IDs are the ids the event is about, by kind: run, question, member.
	IDs map[string]string `json:"ids,omitempty"`
	// Fields are the event's details (the error, the budget, the
	// options…).
	Fields map[string]any `json:"fields,omitempty"`
	// Console links to the team's page in the daemon's web console.
	Console string    `json:"console,omitempty"`
	Time    time.Time `json:"time"`
}

// Notification is one delivery in the outbox as GET /notifications lists
// it. URL is shown without credentials or query, which may hold secrets.
type Notification struct {
	ID       string `json:"id"`
	Event    string `json:"event"`
	Workflow string `json:"workflow,omitempty"`
	Tag      string `json:"tag,omitempty"`
	URL      string `json:"url"`
	// State is pending, delivered or failed.
	State       string    `json:"state"`
	Attempts    int       `json:"attempts"`
	LastError   string    `json:"last_error,omitempty"`
	LastStatus  int       `json:"last_status,omitempty"`
	NextAt      time.Time `json:"next_at,omitzero"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
}

// NotificationList is GET /notifications' answer, newest first.
type NotificationList struct {
	Notifications []Notification `json:"notifications"`
}

// NotifyTestResult is POST /notify/test/{wf}/{tag}'s answer: the ids of
// the deliveries the test event made, one per subscription.
type NotifyTestResult struct {
	Workflow   string   `json:"workflow"`
	Tag        string   `json:"tag"`
	Deliveries []string `json:"deliveries"`
}
