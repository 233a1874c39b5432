package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// Backend is a plugin's backend seen from the calling side: Run streams
// the plugin's events into events and returns the plugin's error
// unchanged (class, text and Permanent mark).
type Backend struct {
	rpc pluginv1.BackendServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ backend.Backend = (*Backend)(nil)

// NewBackend returns the Backend that runs over conn. done is the context
// go-plugin hands GRPCClient, cancelled when the plugin process exits (or
// the connection ends), which ends a run in progress with
// sdk.ErrUnavailable instead of leaving it waiting.
func NewBackend(done context.Context, conn grpc.ClientConnInterface) *Backend {
	return &Backend{rpc: pluginv1.NewBackendServiceClient(conn), done: done}
}

// Run runs req in the plugin. It returns nil when the plugin's Run
// returned nil, the plugin's error when it failed, sdk.ErrUnavailable when
// the plugin could not be reached or died, ctx's error when ctx ended, and
// the error of events.Send (wrapped) when the caller refused an event; in
// every case but the first the plugin's Run is cancelled.
func (c *Backend) Run(ctx context.Context, req backend.Request, events backend.Events) error {
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
func (c *Backend) transportError(ctx context.Context, err error) error {
	err, permanent := grpcerr.FromCall(ctx, c.done, err)
	if permanent {
		return backend.Permanent(err)
	}
	return err
}
