package grpcplugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// backendClient is plugintest's Backend for a plugin served in the test:
// Run streams the plugin's events into events and returns the plugin's
// error unchanged (class, text and Permanent mark), as the daemon's client
// (host/pluginclient) does.
type backendClient struct {
	rpc pluginv1.BackendServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ backend.Backend = (*backendClient)(nil)

// Run runs req in the plugin. It returns nil when the plugin's Run
// returned nil, the plugin's error when it failed, sdk.ErrUnavailable when
// the plugin could not be reached or died, ctx's error when ctx ended, and
// the error of events.Send (wrapped) when the daemon refused an event; in
// every case but the first the plugin's Run is cancelled.
func (c *backendClient) Run(ctx context.Context, req backend.Request, events backend.Events) error {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop() // cancels the stream, and so the plugin's Run, on every early return
	stream, err := c.rpc.Run(ctx, wire.RequestToProto(req))
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
			return wire.ErrorFromProto(e)
		}
		ev, ok := wire.EventFromProto(resp)
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
func (c *backendClient) transportError(ctx context.Context, err error) error {
	err, permanent := grpcerr.FromCall(ctx, c.done, err)
	if permanent {
		return backend.Permanent(err)
	}
	return err
}
