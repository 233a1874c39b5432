package plugin

import (
	"context"
	"errors"
	"slices"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/internal/grpcplugin"
)

// ProtocolVersion is the major version of the plugin protocol (proto
// package agentworker.plugin.v1, go-plugin's VersionedPlugins key).
// Additive changes keep it and are advertised in Info.Capabilities; a
// breaking change serves version 2 beside it.
const ProtocolVersion = 1

// APIVersion is the protocol version a plugin built with this sdk serves,
// as Info.APIVersions names it.
const APIVersion = "v1"

// CapabilityRunEnv says a backend plugin built with this sdk takes its
// run's env and project directory from the request and serves one run per
// process, so the daemon may start it before the run is known, as a warm
// spare. Serve advertises it for every backend; the daemon starts a
// plugin without it cold for each run.
const CapabilityRunEnv = "run-env"

// CapabilitySandbox says a backend plugin built with this sdk confines
// itself to its run's sandbox policy (the request's) before its backend
// sees the run, so the daemon may hand the run a warm spare started under
// the broader base layer. The daemon starts a plugin without it confined
// to the run's exact policy, cold, for each run.
const CapabilitySandbox = "sandbox"

// Handshake is shared by the daemon and every plugin. The cookie is not a
// secret and never changes: it only stops a user who runs a plugin binary
// by hand from seeing gibberish.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "AGENT_WORKER_PLUGIN",
	MagicCookieValue: "b7c1e3f0-agent-worker-plugin-v1-5d2a9c8e",
}

// The kinds of plugin, as Info.Kind names them; the daemon uses a plugin
// only for its kind.
const (
	// KindBackend is a plugin that runs agents (one process per run).
	KindBackend = "backend"
	// KindDocs is a plugin that stores documents (one long-lived process).
	KindDocs = "docs"
)

// The names in the go-plugin plugin set of protocol version
// ProtocolVersion, part of the protocol: every binary serves NameInfo
// beside the one of its kind, and the daemon dispenses them by these names.
const (
	NameInfo    = "info"
	NameBackend = "backend"
	NameDocs    = "docs"
)

// Info is what a plugin says about itself when the daemon fingerprints it,
// before it is used: the daemon lists it, picks plugins by Name and Kind,
// and uses optional features only if Capabilities names them.
type Info struct {
	// Name is what users write in their config (backend: mock).
	Name string
	// Kind is KindBackend or KindDocs; Serve fills it.
	Kind string
	// Version is the plugin's own version, shown to users.
	Version string
	// APIVersions are the protocol versions served; Serve fills it.
	APIVersions []string
	// Capabilities name optional features the plugin has.
	Capabilities []string
	// Status is what the plugin finds about its environment, shown by
	// `agent-worker plugins` (a CLI's version and path, or how to install
	// it). Config.Status, when set, replaces it on every GetInfo.
	Status string
}

// Config is everything Serve needs: a description and exactly one of
// Backend and Docs.
type Config struct {
	Info Info
	// Backend makes the binary a backend plugin.
	Backend backend.Backend
	// Docs makes the binary a docs provider plugin.
	Docs docprovider.Provider
	// Status, if set, reports the plugin's environment (is its CLI
	// installed, which version) for users listing plugins. The daemon asks
	// when it fingerprints the binary, never per run, so it may take a
	// moment; keep it well under a few seconds and honour ctx.
	Status func(ctx context.Context) string
	// Logger receives the plugin's own logs; nil means JSON on stderr,
	// which the daemon re-emits with the plugin's name and run.
	Logger hclog.Logger
}

// PluginSet checks cfg and returns the go-plugin set Serve serves (info
// plus the plugin's kind), with Info.Kind and Info.APIVersions filled: the
// plugin's side of the protocol, nothing of the daemon's. It is exported
// for in-process hosts, such as plugintest and the daemon's client tests,
// that serve a plugin without a process; a plugin's main calls Serve.
func PluginSet(cfg Config) (goplugin.PluginSet, error) {
	set, _, err := pluginSet(cfg)
	return set, err
}

// pluginSet is PluginSet that also returns the filled Info.
func pluginSet(cfg Config) (goplugin.PluginSet, Info, error) {
	info := cfg.Info
	if info.Name == "" {
		return nil, info, errors.New("plugin.Config.Info.Name is empty; name the plugin as users will write it")
	}
	set := goplugin.PluginSet{}
	switch {
	case cfg.Backend != nil && cfg.Docs != nil:
		return nil, info, errors.New("plugin.Config sets both Backend and Docs; a plugin binary is one kind")
	case cfg.Backend != nil:
		info.Kind = KindBackend
		set[NameBackend] = &grpcplugin.Backend{Impl: cfg.Backend}
		info.Capabilities = slices.Clone(info.Capabilities)
		for _, c := range []string{CapabilityRunEnv, CapabilitySandbox} {
			if !slices.Contains(info.Capabilities, c) {
				info.Capabilities = append(info.Capabilities, c)
			}
		}
	case cfg.Docs != nil:
		info.Kind = KindDocs
		set[NameDocs] = &grpcplugin.Docs{Impl: cfg.Docs}
	default:
		return nil, info, errors.New("plugin.Config sets neither Backend nor Docs")
	}
	info.APIVersions = []string{APIVersion}
	set[NameInfo] = &infoPlugin{info: info, status: cfg.Status}
	return set, info, nil
}
