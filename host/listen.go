package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// identifyWait bounds asking the holder of a taken address who it is.
const identifyWait = 2 * time.Second

// AddrInUseError is an address the user chose for the API that another
// process holds. Holder is that process when it is an agent-worker daemon
// (it answered GET /identity), nil for any other program.
type AddrInUseError struct {
	Addr   string
	Holder *api.Identity
	Err    error
}

func (e *AddrInUseError) Error() string {
	return e.Explain("pick another address with --listen (port 0 picks a free one)")
}

func (e *AddrInUseError) Unwrap() error { return e.Err }

// Explain is the error with the way to pick another address where the
// user chose this one (a flag, an environment variable); when the holder
// is an agent-worker daemon, stopping it comes first.
func (e *AddrInUseError) Explain(pickAnother string) string {
	if e.Holder == nil {
		return fmt.Sprintf("listen on %s: address already in use by another program: %s", e.Addr, pickAnother)
	}
	stop := "stop it with `agent-worker stop --all --home HOME`"
	if e.Holder.Home != "" {
		stop = "stop it with `agent-worker stop --all --home " + e.Holder.Home + "`"
	}
	return fmt.Sprintf("listen on %s: address already in use by %s: %s, or %s", e.Addr, e.Holder, stop, pickAnother)
}

// listenAPI binds the API's address. An address the user chose is
// theirs: taken, it is an *AddrInUseError naming the holder. The default
// gives way: taken, the daemon listens on a free port of the same host,
// logs why, and returns the fallback for status.
func listenAPI(ctx context.Context, addr string, chosen bool, log hclog.Logger) (net.Listener, *api.ListenFallback, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	holder, isDaemon := api.Identify(ctx, addr, identifyWait)
	if chosen {
		e := &AddrInUseError{Addr: addr, Err: err}
		if isDaemon {
			e.Holder = &holder
		}
		return nil, nil, e
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
		return nil, nil, fmt.Errorf("listen on a free port of %s (%s is in use): %w", host, addr, err)
	}
	fb := &api.ListenFallback{Default: addr, HeldBy: "another program"}
	if isDaemon {
		fb.HeldBy = holder.String()
	}
	log.Info(fmt.Sprintf("%s is in use (by %s): listening on %s", addr, fb.HeldBy, ln.Addr()), "default", addr, "listen", ln.Addr().String())
	return ln, fb, nil
}
