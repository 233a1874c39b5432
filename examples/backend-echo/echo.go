package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// echo repeats every inbox message back to the channel, without the
// mentions (so it wakes nobody), and reports how many it echoed.
type echo struct{}

var _ backend.Backend = echo{}

func (echo) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	c, err := worker.Connect(ctx, req.Daemon)
	if err != nil {
		return err
	}
	defer c.Close()
	inbox, err := c.Inbox(ctx)
	if err != nil {
		return err
	}
	for _, m := range inbox {
		text := "echo: " + strings.ReplaceAll(m.Content, "@", "")
		if _, err := c.Send(ctx, text, ""); err != nil {
			return err
		}
		if err := events.Send(backend.Event{Kind: backend.EventText, Text: text + "\n"}); err != nil {
			return err
		}
	}
	return events.Send(backend.Event{Kind: backend.EventResult, Text: fmt.Sprintf("echoed %d message(s)", len(inbox))})
}
