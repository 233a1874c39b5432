package contract

// Headers of a webhook delivery (POST /hooks/{workflow}/{name}). The names
// are GitHub's, which other senders copy, and GitLab's.
const (
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256 of the raw
	// body keyed with the trigger's secret.
	HeaderSignature = "X-Hub-Signature-256"
	// HeaderDelivery and HeaderRequestID identify a delivery, so one sent
	// twice posts once; the first that is set counts.
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderRequestID = "X-Request-Id"
	// HeaderGitHubEvent names a GitHub delivery's event (pull_request …);
	// its action is in the body.
	HeaderGitHubEvent = "X-GitHub-Event"
	// GitLab's: the trigger's secret itself, the event ("Merge Request
	// Hook" …) and the delivery's id.
	HeaderGitLabToken     = "X-Gitlab-Token"
	HeaderGitLabEvent     = "X-Gitlab-Event"
	HeaderGitLabEventUUID = "X-Gitlab-Event-UUID"
)

// HookResult is the answer to a webhook delivery: 202 with the message it
// posted, or 200 with Duplicate set and the seq of the message the first
// delivery of the same id posted.
type HookResult struct {
	Workflow  string `json:"workflow"`
	Tag       string `json:"tag"`
	Trigger   string `json:"trigger"`
	Delivery  string `json:"delivery,omitempty"`
	Duplicate bool   `json:"duplicate"`
	Seq       int64  `json:"seq"`
	MessageID string `json:"message_id,omitempty"`
	// Missing lists the ${{ body.PATH }} variables the body lacked; they
	// were posted empty.
	Missing []string `json:"missing,omitempty"`
	// Event is the delivery's event as events: names it
	// (merge_request.open), for a github or gitlab trigger.
	Event string `json:"event,omitempty"`
	// Ignored says why nothing was posted for a delivery the trigger
	// acknowledges but does not take (an event not in its events:);
	// answered 200.
	Ignored string `json:"ignored,omitempty"`
	// Report is the id of the report the delivery armed, posted when the
	// team goes idle.
	Report string `json:"report,omitempty"`
}
