package plugin

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/internal/grpcplugin"
)

// maxMessageBytes raises gRPC's 4 MiB default, which the plugin side
// would otherwise apply to requests (documents of up to 1 MiB, large agent
// configs) while the daemon side accepts any size.
const maxMessageBytes = 64 << 20

// Serve runs the plugin described by cfg until the daemon stops it; it is
// all a plugin's main calls. It fills Info.Kind and Info.APIVersions, logs
// JSON to stderr unless cfg.Logger is set (and makes that logger hclog's
// default, so hclog.L() in the plugin reaches the daemon too), and serves
// gRPC only. A wrong cfg, or a user running the binary by hand, gets a
// message on stderr and exit status 1. Serve ignores SIGINT (the daemon
// stops plugins itself), and nothing may write to stdout before it: the
// daemon reads the handshake there.
func Serve(cfg Config) {
	set, info, err := pluginSet(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s is an agent-worker %s plugin (%s %s); the agent-worker daemon starts it, it is not meant to be run by hand.\n"+
			"Put it in a plugins.d folder and the daemon will find it.\n",
			filepath.Base(os.Args[0]), info.Kind, info.Name, info.Version)
		os.Exit(1)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{
			Name:       cfg.Info.Name,
			Level:      hclog.Debug,
			Output:     os.Stderr,
			JSONFormat: true,
		})
		hclog.SetDefault(logger)
	}
	if b, ok := set[NameBackend].(*grpcplugin.Backend); ok {
		b.Process = true // this process serves one run
	}
	subreaper := becomeSubreaper()
	stopTreeOnTerm(subreaper)
	dieWithParent()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: set},
		GRPCServer:       newGRPCServer,
		Logger:           logger,
	})
	if subreaper {
		endDescendants() // the daemon asked it to stop: nothing it started stays
	}
	endChildGroups()
}

// newGRPCServer is go-plugin's default server with the message limits
// raised; setting it is also what makes go-plugin serve gRPC, not net/rpc.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(maxMessageBytes), grpc.MaxSendMsgSize(maxMessageBytes))...)
}
