package api

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// SessionDirective is a directive file of the agent's effort brought into
// a live session's context (once per effort, as for daemon runs).
type SessionDirective struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// LiveSession is one context window of a live Claude Code session: a row
// of `sessions`.
type LiveSession struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// Prev is the session it continues ("" for none).
	Prev string `json:"prev,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Run holds its transcript (`logs RUN`).
	Run         string     `json:"run"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	Heartbeats  int64      `json:"heartbeats"`
	// ContextTokens is the context it last used (0: unknown).
	ContextTokens int64    `json:"context_tokens,omitempty"`
	Loaded        []string `json:"loaded_files"`
	// Effort and Phase: the effort it started with and where that effort
	// is now.
	Effort string `json:"effort,omitempty"`
	Phase  string `json:"phase,omitempty"`
	// Dehydrated: it stored a payload for the next context window.
	Dehydrated bool `json:"dehydrated,omitempty"`
}

// SessionList is GET /sessions.
type SessionList struct {
	Sessions []LiveSession `json:"sessions"`
}

// SessionContinue is GET /sessions/continue: what a new session of the
// agent should start from.
type SessionContinue struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Payload string `json:"payload"`
}

// Sessions is GET /sessions[?agent=T]: the live sessions, oldest first.
func (c *Client) Sessions(ctx context.Context, agent *Target) (SessionList, error) {
	var out SessionList
	path := "/sessions"
	if agent != nil {
		path += "?agent=" + url.QueryEscape(agent.String())
	}
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// ContinueSession is GET /sessions/continue[?agent=T]: the dehydration
// payload of the agent's newest session (of any agent's without one).
func (c *Client) ContinueSession(ctx context.Context, agent *Target) (SessionContinue, error) {
	var out SessionContinue
	path := "/sessions/continue"
	if agent != nil {
		path += "?agent=" + url.QueryEscape(agent.String())
	}
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}
