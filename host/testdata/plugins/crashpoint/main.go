// Command crashpoint is a backend that fails where its run's CRASHPOINT
// variable (the agent's env) says, for the run supervisor's crash tests
// (host/runner/crash_test.go):
//
//	before-handshake  exits with code 3 before the plugin handshake
//	garbage           prints a line instead of the handshake, then waits
//	stubborn          sends one event, then ignores its run's cancel and
//	                  SIGTERM: only the process-group SIGKILL ends it
//	exit2             sends "working", waits until the file CRASHPOINT_GATE
//	                  exists (the test creates it once it has the event,
//	                  so the event is not lost in flight), exits with code 2
//	child             the same, having started a child (sleep 3600) in its
//	                  process group and said its pid in a log event
//
// Unset (as when the catalog examines it), it serves a backend whose run
// sends "ok" as its result.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	switch os.Getenv("CRASHPOINT") {
	case "before-handshake":
		fmt.Fprintln(os.Stderr, "crashpoint: exiting before the handshake")
		os.Exit(3)
	case "garbage":
		fmt.Println("hello from a plugin that prints instead of its handshake")
		time.Sleep(time.Hour)
		return
	}
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "crashpoint", Version: "0.0.1"},
		Backend: backend.Func(func(ctx context.Context, req backend.Request, events backend.Events) error {
			switch os.Getenv("CRASHPOINT") {
			case "exit2", "child":
				return crash(events)
			case "stubborn":
				// Here, after Serve's own handlers: the sdk's plugin side
				// would otherwise end the process on SIGTERM.
				signal.Ignore(syscall.SIGTERM)
				if err := events.Send(backend.Event{Kind: backend.EventText, Text: "working"}); err != nil {
					return err
				}
				select {} // deaf to ctx: the daemon must kill it
			}
			return events.Send(backend.Event{Kind: backend.EventResult, Text: "ok"})
		})})
}

// crash sends its events, waits for the gate and exits with code 2.
func crash(events backend.Events) error {
	if os.Getenv("CRASHPOINT") == "child" {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := events.Send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("spawned sleep (pid %d)", cmd.Process.Pid)}); err != nil {
			return err
		}
	}
	if err := events.Send(backend.Event{Kind: backend.EventText, Text: "working"}); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(os.Getenv("CRASHPOINT_GATE")); err == nil {
			os.Exit(2)
		}
		time.Sleep(10 * time.Millisecond) // a file has no event to wait on
	}
}
