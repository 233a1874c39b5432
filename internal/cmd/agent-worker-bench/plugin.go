package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// The ceiling of the ping-pong and ring rows: each of their messages is a
// run, and each run a fresh go-plugin process. The cheapest honest form of
// that with our plugin library is a bare go-plugin process with nothing of
// ours in it: started, handshaken over gRPC, asked one gRPC call (the
// health check go-plugin serves itself), stopped the way go-plugin stops a
// plugin, and reaped. The bench runs itself as that plugin.

// barePluginHandshake is the bare plugin's go-plugin handshake.
var barePluginHandshake = goplugin.HandshakeConfig{ProtocolVersion: 1,
	MagicCookieKey: "AGENT_WORKER_BENCH_BARE_PLUGIN", MagicCookieValue: "bare"}

// barePlugin serves no service of its own: go-plugin's health service,
// broker and controller are all a cycle uses.
type barePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (barePlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (barePlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return struct{}{}, nil
}

// serveBarePlugin is the bench as the bare plugin (-bare-plugin).
func serveBarePlugin() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: barePluginHandshake,
		Plugins:         goplugin.PluginSet{"bare": barePlugin{}},
		GRPCServer:      goplugin.DefaultGRPCServer,
		Logger:          hclog.NewNullLogger(),
	})
}

// pluginCycles runs bare plugin cycles for window, two at a time (one per
// core of the machine the goals are set on), and returns cycles per second
// and the CPU per cycle of this process (the host side) and of the reaped
// plugin processes.
func pluginCycles(ctx context.Context, window time.Duration) (rate float64, host, plugin time.Duration, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, 0, err
	}
	cycle := func() error {
		cmd := exec.Command(self, "-bare-plugin")
		cmd.Env = []string{barePluginHandshake.MagicCookieKey + "=" + barePluginHandshake.MagicCookieValue}
		c := goplugin.NewClient(&goplugin.ClientConfig{
			HandshakeConfig:  barePluginHandshake,
			Plugins:          goplugin.PluginSet{"bare": barePlugin{}},
			Cmd:              cmd,
			SkipHostEnv:      true,
			AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
			Logger:           hclog.NewNullLogger(),
		})
		defer c.Kill()
		rpc, err := c.Client()
		if err != nil {
			return err
		}
		return rpc.Ping()
	}
	host0, plugin0, err := cpuTimes(os.Getpid())
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	var (
		wg     sync.WaitGroup
		cycles atomic.Int64
		errs   = make([]error, 2) // one per worker
	)
	for w := range errs {
		wg.Go(func() {
			for time.Since(start) < window && ctx.Err() == nil {
				if errs[w] = cycle(); errs[w] != nil {
					return
				}
				cycles.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return 0, 0, 0, fmt.Errorf("bare plugin: %w", err)
	}
	host1, plugin1, err := cpuTimes(os.Getpid())
	if err != nil {
		return 0, 0, 0, err
	}
	n := time.Duration(cycles.Load())
	if n == 0 {
		return 0, 0, 0, errors.New("bare plugin: no cycle in the window")
	}
	return float64(n) / elapsed.Seconds(), (host1 - host0) / n, (plugin1 - plugin0) / n, nil
}
