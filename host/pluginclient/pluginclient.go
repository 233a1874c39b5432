package pluginclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// StartTimeout bounds a plugin's start-up and handshake: a healthy plugin
// takes well under a second, and go-plugin's default of a minute would
// leave a run hanging on a broken binary.
const StartTimeout = 10 * time.Second

// ClientConfig is how the daemon starts a plugin binary (cmd) as a
// go-plugin client: gRPC only, no TLS, not Managed (the daemon
// kills each client itself; go-plugin never forgets Managed ones), and a
// StartTimeout. It sets no go-plugin SecureConfig: the daemon executes
// private copies it hashed once when it wrote them, and a hash per start
// cost tens of milliseconds without closing the gap between that hash and
// the exec. The plugin's stderr, where it logs, is re-emitted through logger (nil:
// go-plugin's default on stderr); stdout after the handshake is dropped.
// cmd.Env is the plugin's whole environment besides go-plugin's own
// handshake variables: the daemon's is not added (SkipHostEnv), so a
// secret in it never reaches a plugin or what the plugin runs.
// A ClientConfig serves one NewClient.
func ClientConfig(cmd *exec.Cmd, logger hclog.Logger) *goplugin.ClientConfig {
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: hostPlugins(),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// No AutoMTLS: the plugin's socket is in a private (0700) directory
		// of the daemon's user, so TLS on it would only keep out processes
		// of that same user, which can open the database and the documents
		// directly. go-plugin's AutoMTLS makes a P-521 certificate on each
		// side of every start, ~20 ms of CPU per process on each side: most
		// of a warm spare's cost, on the path of the run it competes with.
		AutoMTLS:     false,
		Managed:      false,
		SkipHostEnv:  true,
		StartTimeout: StartTimeout,
		Logger:       logger,
		SyncStdout:   io.Discard,
		SyncStderr:   io.Discard,
	}
	if logger != nil {
		// Writes to os.Stderr after Serve travel over go-plugin's stdio
		// stream rather than the stderr pipe; keep them with the logs.
		cfg.SyncStderr = logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	}
	return cfg
}

// DispenseInfo returns the description of a started plugin; the daemon
// calls it for every plugin to learn its kind and versions.
func DispenseInfo(c goplugin.ClientProtocol) (InfoClient, error) {
	return dispense[InfoClient](c, plugin.NameInfo)
}

// DispenseBackend returns the Backend served by a started backend plugin.
// Check the kind with DispenseInfo first: a docs plugin dispenses too, but
// its Run fails with a permanent error.
func DispenseBackend(c goplugin.ClientProtocol) (backend.Backend, error) {
	return dispense[backend.Backend](c, plugin.NameBackend)
}

// DispenseDocs returns the Provider served by a started docs plugin.
func DispenseDocs(c goplugin.ClientProtocol) (docprovider.Provider, error) {
	return dispense[docprovider.Provider](c, plugin.NameDocs)
}

func dispense[T any](c goplugin.ClientProtocol, name string) (T, error) {
	var zero T
	raw, err := c.Dispense(name)
	if err != nil {
		return zero, fmt.Errorf("dispense %s: %w", name, err)
	}
	v, ok := raw.(T)
	if !ok {
		return zero, fmt.Errorf("dispense %s: got %T", name, raw)
	}
	return v, nil
}

// Ping asks a started plugin whether it is still serving, through the
// health service go-plugin runs in every plugin process beside the
// plugin's own services. It answers while the plugin's code is busy (a
// long model call), so it proves the process alive, not its progress; ctx
// bounds the wait, so a stopped or wedged process is an error, not a hang.
// go-plugin's own Ping has no deadline.
func Ping(ctx context.Context, c goplugin.ClientProtocol) error {
	g, ok := c.(*goplugin.GRPCClient)
	if !ok {
		return fmt.Errorf("ping plugin: %T is not a gRPC plugin client", c)
	}
	resp, err := grpc_health_v1.NewHealthClient(g.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: goplugin.GRPCServiceName})
	if err != nil {
		return fmt.Errorf("ping plugin: %w", err)
	}
	if resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("ping plugin: status %s", resp.GetStatus())
	}
	return nil
}

// hostPlugins is the daemon's side of every protocol version: all the
// names, with the clients and no implementations.
func hostPlugins() map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		plugin.ProtocolVersion: {
			plugin.NameInfo:    &infoPlugin{},
			plugin.NameBackend: &backendPlugin{},
			plugin.NameDocs:    &docsPlugin{},
		},
	}
}

// errClientOnly is what the daemon's halves answer when asked to serve: the
// plugin serves, the daemon only calls (plugin.Serve has the servers).
var errClientOnly = errors.New("the daemon's plugin client does not serve a plugin: plugin.Serve does")
