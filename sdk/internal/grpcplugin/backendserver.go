package grpcplugin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// backendServer runs a plugin's Backend for the daemon's calls.
type backendServer struct {
	pluginv1.UnimplementedBackendServiceServer
	impl backend.Backend
	// process is set when this server is the whole plugin process (Serve,
	// not an in-process test host): its one run may take over the
	// process's environment and working directory.
	process bool
	ran     atomic.Bool
	// key is the secret the daemon started the process with; "" when it
	// gave none (an older daemon, a test host).
	key string
}

// Run runs the backend with the stream's ctx (cancelled when the daemon
// cancels the run or goes away) and streams its events. A failed run sends
// its error as the last message and still ends the stream cleanly, so the
// daemon can tell a plugin's error from a broken transport.
func (s *backendServer) Run(req *pluginv1.RunRequest, stream grpc.ServerStreamingServer[pluginv1.RunResponse]) error {
	ctx := stream.Context()
	r := wire.RequestFromProto(req)
	if s.process {
		if err := s.enter(r); err != nil {
			return stream.Send(&pluginv1.RunResponse{Response: &pluginv1.RunResponse_Error{Error: wire.ErrorToProto(backend.Permanent(err))}})
		}
	}
	ev := &streamEvents{ctx: ctx, stream: stream}
	runErr := s.impl.Run(ctx, r, ev)
	ev.close()
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx) // nobody is listening any more
	}
	return stream.Send(&pluginv1.RunResponse{Response: &pluginv1.RunResponse_Error{Error: wire.ErrorToProto(runErr)}})
}

// enter makes the process the run's: a plugin process serves exactly one
// run (a warm spare is started before its run is known, and a second run
// would see what the first left in its environment and memory), so a
// second Run is refused. The agent's environment is set over the one the
// process was started with, and the process moves to the project
// directory, as if it had been started for this run.
func (s *backendServer) enter(r backend.Request) error {
	// Checked before the process is spent: a stranger's request must not
	// use up the run the daemon will send.
	if s.key != "" && subtle.ConstantTimeCompare([]byte(r.ProcessKey), []byte(s.key)) != 1 {
		return sdk.Errorf(sdk.ErrPermission, "run %s refused: it does not carry the key the daemon started this plugin process with", r.RunID)
	}
	if !s.ran.CompareAndSwap(false, true) {
		return sdk.Errorf(sdk.ErrConflict, "this plugin process has served its run already (run %s refused): the daemon starts a fresh process for every run", r.RunID)
	}
	for k, v := range r.Env {
		if err := os.Setenv(k, v); err != nil {
			return sdk.Errorf(sdk.ErrInvalid, "agent env %q: %v: fix the agent's env", k, err)
		}
	}
	if r.ProjectDir != "" {
		if err := os.Chdir(r.ProjectDir); err != nil {
			return sdk.Errorf(sdk.ErrInvalid, "enter the project directory: %v", err)
		}
	}
	// The daemon started this process under a base layer (a warm spare's)
	// or under this very policy (SandboxApplied); narrow the first to the
	// run's own, before the backend runs a line of the run.
	if !r.Sandbox.IsZero() && !r.SandboxApplied {
		if err := sandbox.Restrict(r.Sandbox); err != nil {
			return sdk.Errorf(sdk.ErrPermission, "confine the run to its sandbox: %v", err)
		}
	}
	return nil
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
func (s *streamEvents) Send(e backend.Event) error {
	resp, err := wire.EventToProto(e)
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
