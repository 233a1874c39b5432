package tools

import "time"

// TeamSearch is the full-text search of the caller's team (SPEC.md "Trust,
// people and reach").
const TeamSearch = "team_search"

// SearchArgs is team_search's input.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"words to find (all must match; stemmed, so migrating finds migration), \"an exact phrase\" in double quotes, or a prefix* word"`
	Kind  string `json:"kind,omitempty" jsonschema:"only message, doc or run (your own runs' transcripts); omit for all three"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many hits, 1 to 100 (default 20)"`
}

// SearchHit is one thing team_search found. Kind says which fields name
// it: a message has seq and from (and to for a direct message), a
// document has file, a transcript line has run_id and event.
type SearchHit struct {
	Kind  string `json:"kind"`
	Seq   int64  `json:"seq,omitempty"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	File  string `json:"file,omitempty"`
	RunID string `json:"run_id,omitempty"`
	Event int    `json:"event,omitempty"`
	// Snippet is the text around the hits, each hit marked «like this».
	Snippet string    `json:"snippet"`
	At      time.Time `json:"at"`
}

// SearchResult is team_search's result, best hits first.
type SearchResult struct {
	Hits  []SearchHit `json:"hits"`
	Count int         `json:"count"`
}
