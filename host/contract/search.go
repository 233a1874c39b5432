package contract

import "time"

// SearchHit is one thing a search found, best first. Kind says which of
// the naming fields are set: a message has Seq, Sender (and To for a
// direct message); a document has Path; a transcript line has RunID,
// Agent and Event.
type SearchHit struct {
	Kind     string `json:"kind"` // message, doc or run
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	Seq      int64  `json:"seq,omitempty"`
	Sender   string `json:"sender,omitempty"`
	To       string `json:"to,omitempty"`
	Path     string `json:"path,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Event    int    `json:"event,omitempty"`
	// Snippet is the text around the hits, each hit marked «like this».
	Snippet string    `json:"snippet"`
	Score   float64   `json:"score"`
	At      time.Time `json:"at"`
}

// SearchResult is GET /search/{wf}/{tag}.
type SearchResult struct {
	Query string      `json:"query"`
	Hits  []SearchHit `json:"hits"`
}
