package api

import (
	"context"
	"net/http"
	"net/url"
)

// Queue is GET /worktrees/queue: the merge queue entries on their way, of
// target (@wf[:tag]) or of every workflow when target is ""; with all,
// the newest finished ones too.
func (c *Client) Queue(ctx context.Context, target string, all bool) ([]QueueEntry, error) {
	q := url.Values{}
	if target != "" {
		q.Set("target", target)
	}
	if all {
		q.Set("all", "true")
	}
	path := "/worktrees/queue"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l QueueList
	return l.Entries, c.do(ctx, http.MethodGet, path, nil, &l)
}

// QueueEntry is GET /worktrees/queue/{id}: one entry with the logs of the
// check runs it was part of.
func (c *Client) QueueEntry(ctx context.Context, id string) (QueueEntry, error) {
	var e QueueEntry
	return e, c.do(ctx, http.MethodGet, "/worktrees/queue/"+url.PathEscape(id), nil, &e)
}

// Dequeue is DELETE /worktrees/queue/{id}[?reason=R]: take a queued entry
// (or one being checked) out of its queue.
func (c *Client) Dequeue(ctx context.Context, id, reason string) (QueueEntry, error) {
	path := "/worktrees/queue/" + url.PathEscape(id)
	if reason != "" {
		path += "?" + url.Values{"reason": {reason}}.Encode()
	}
	var e QueueEntry
	return e, c.do(ctx, http.MethodDelete, path, nil, &e)
}
