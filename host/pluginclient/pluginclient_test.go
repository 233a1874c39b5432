package pluginclient_test

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// The host's ClientConfig is the hardened one ARCHITECTURE.md asks for.
func TestClientConfig(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/true")
	cfg := pluginclient.ClientConfig(cmd, hclog.NewNullLogger())
	switch {
	case cfg.Cmd != cmd:
		t.Error("Cmd not set")
	case !cmp.Equal(cfg.AllowedProtocols, []goplugin.Protocol{goplugin.ProtocolGRPC}):
		t.Errorf("AllowedProtocols = %v, want gRPC only", cfg.AllowedProtocols)
	case cfg.AutoMTLS || cfg.Managed:
		t.Errorf("AutoMTLS = %v, Managed = %v; want false, false (private socket directory; see ClientConfig)", cfg.AutoMTLS, cfg.Managed)
	case cfg.StartTimeout != pluginclient.StartTimeout:
		t.Errorf("StartTimeout = %v", cfg.StartTimeout)
	case cfg.SecureConfig != nil:
		t.Errorf("SecureConfig = %+v, want none: the daemon runs copies it verified once", cfg.SecureConfig)
	case cfg.HandshakeConfig != plugin.Handshake:
		t.Errorf("HandshakeConfig = %+v", cfg.HandshakeConfig)
	case cfg.SyncStdout != io.Discard || cfg.SyncStderr == nil:
		t.Errorf("SyncStdout = %v, SyncStderr = %v", cfg.SyncStdout, cfg.SyncStderr)
	}
	set := cfg.VersionedPlugins[plugin.ProtocolVersion]
	for _, name := range []string{"info", "backend", "docs"} {
		if _, ok := set[name].(goplugin.GRPCPlugin); !ok {
			t.Errorf("VersionedPlugins[%d][%q] = %T, want a GRPCPlugin", plugin.ProtocolVersion, name, set[name])
		}
	}
}

// Dispensing from a connection that cannot is an error, not a panic.
func TestDispenseErrors(t *testing.T) {
	t.Parallel()
	bad := badProtocol{}
	if _, err := pluginclient.DispenseBackend(bad); err == nil {
		t.Error("DispenseBackend from a failing connection = nil error")
	}
	if _, err := pluginclient.DispenseDocs(bad); err == nil || !strings.Contains(err.Error(), "docs") {
		t.Errorf("DispenseDocs = %v, want an error naming docs", err)
	}
	if _, err := pluginclient.DispenseInfo(wrongType{}); err == nil {
		t.Error("DispenseInfo of the wrong type = nil error")
	}
}

type badProtocol struct{ goplugin.ClientProtocol }

func (badProtocol) Dispense(string) (any, error) { return nil, errors.New("connection lost") }

type wrongType struct{ goplugin.ClientProtocol }

func (wrongType) Dispense(string) (any, error) { return 42, nil }
