package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// server runs a plugin's Backend for the daemon's calls.
type server struct {
	pluginv1.UnimplementedBackendServiceServer
	impl Backend
}

// Run runs the backend with the stream's ctx (cancelled when the daemon
// cancels the run or goes away) and streams its events. A failed run sends
// its error as the last message and still ends the stream cleanly, so the
// daemon can tell a plugin's error from a broken transport.
func (s *server) Run(req *pluginv1.RunRequest, stream grpc.ServerStreamingServer[pluginv1.RunResponse]) error {
	ctx := stream.Context()
	ev := &streamEvents{ctx: ctx, stream: stream}
	runErr := s.impl.Run(ctx, requestFromProto(req), ev)
	ev.close()
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx) // nobody is listening any more
	}
	return stream.Send(&pluginv1.RunResponse{Response: &pluginv1.RunResponse_Error{Error: errorToProto(runErr)}})
}

// errRunOver is what Send returns after Run has returned.
var errRunOver = errors.New("the run is over")

// streamEvents is the Events a plugin's Backend sends to. Backends may send
// from several goroutines (a reader of a CLI's stderr beside the main
// loop), and a gRPC stream allows one sender at a time, so mu guards the
// fields that follow and serializes sends.
type streamEvents struct {
	ctx context.Context

	mu     sync.Mutex
	stream grpc.ServerStreamingServer[pluginv1.RunResponse]
	closed bool
}

// Send sends e to the daemon. It fails once the daemon has cancelled the
// run, refused an event or gone away, and after Run has returned.
func (s *streamEvents) Send(e Event) error {
	resp, err := eventToProto(e)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("send %s event: %w", e.Kind, errRunOver)
	}
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("send %s event: %w", e.Kind, context.Cause(s.ctx))
	}
	if err := s.stream.Send(resp); err != nil {
		if s.ctx.Err() != nil {
			err = context.Cause(s.ctx)
		}
		return fmt.Errorf("send %s event: %w", e.Kind, err)
	}
	return nil
}

// close makes later Sends fail, so that a goroutine the backend left
// behind cannot write to a finished stream.
func (s *streamEvents) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
