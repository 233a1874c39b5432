package contract

import "time"

// ConsoleLogin is the body of POST /console/codes: a one-time login link
// to the web console. It works once, until ExpiresAt.
type ConsoleLogin struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Resource is the body of GET /resources/{wf}/{tag}/{id}: long content an
// agent passed by reference (a long message's full text, tool output).
type Resource struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}
