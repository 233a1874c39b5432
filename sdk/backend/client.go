package backend

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agent-worker/agent-worker/sdk/internal/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// client is the daemon's Backend for a plugin process: Run streams the
// plugin's events into events and returns the plugin's error unchanged
// (class, text and Permanent mark).
type client struct {
	rpc pluginv1.BackendServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ Backend = (*client)(nil)

// Run runs req in the plugin. It returns nil when the plugin's Run
// returned nil, the plugin's error when it failed, sdk.ErrUnavailable when
// the plugin could not be reached or died, ctx's error when ctx ended, and
// the error of events.Send (wrapped) when the daemon refused an event; in
// every case but the first the plugin's Run is cancelled.
func (c *client) Run(ctx context.Context, req Request, events Events) error {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop() // cancels the stream, and so the plugin's Run, on every early return
	stream, err := c.rpc.Run(ctx, requestToProto(req))
	if err != nil {
		return c.transportError(ctx, err)
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return c.transportError(ctx, err)
		}
		if e := resp.GetError(); e != nil {
			return errorFromProto(e)
		}
		ev, ok := eventFromProto(resp)
		if !ok {
			continue // an event of a later protocol version
		}
		if err := events.Send(ev); err != nil {
			return fmt.Errorf("send %s event: %w", ev.Kind, err)
		}
	}
}

// transportError is the error of a failed call, with the Permanent mark
// for calls the plugin cannot serve.
func (c *client) transportError(ctx context.Context, err error) error {
	err, permanent := grpcerr.FromCall(ctx, c.done, err)
	if permanent {
		return Permanent(err)
	}
	return err
}
