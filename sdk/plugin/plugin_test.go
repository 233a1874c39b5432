package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
)

var echo = backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
	return ev.Send(backend.Event{Kind: backend.EventResult, Text: "hello from " + req.Agent.Name})
})

// noDocs is a Provider that is never called; it only makes a docs plugin.
type noDocs struct{ docprovider.Provider }

func TestPluginSetChecksConfig(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		cfg  plugin.Config
		want string // part of the error; "" means valid
	}{
		"backend":   {plugin.Config{Info: plugin.Info{Name: "echo"}, Backend: echo}, ""},
		"docs":      {plugin.Config{Info: plugin.Info{Name: "file"}, Docs: noDocs{}}, ""},
		"no name":   {plugin.Config{Backend: echo}, "Name is empty"},
		"both":      {plugin.Config{Info: plugin.Info{Name: "x"}, Backend: echo, Docs: noDocs{}}, "both"},
		"neither":   {plugin.Config{Info: plugin.Info{Name: "x"}}, "neither"},
		"zero":      {plugin.Config{}, "Name is empty"},
		"docs name": {plugin.Config{Info: plugin.Info{Name: "sqlite", Kind: "backend"}, Docs: noDocs{}}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			set, err := plugin.PluginSet(tc.cfg)
			if tc.want == "" {
				if err != nil || set["info"] == nil || len(set) != 2 {
					t.Errorf("PluginSet = %v, %v; want info and one kind", set, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("PluginSet error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// The daemon learns the kind and protocol versions from the sdk, whatever
// the author wrote, and everything else from the author.
func TestGetInfo(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		cfg  plugin.Config
		want plugin.Info
	}{
		"backend": {
			plugin.Config{Info: plugin.Info{Name: "echo", Version: "1.0.0", Capabilities: []string{"resume"}}, Backend: echo},
			plugin.Info{Name: "echo", Kind: plugin.KindBackend, Version: "1.0.0", APIVersions: []string{"v1"}, Capabilities: []string{"resume", plugin.CapabilityRunEnv, plugin.CapabilitySandbox}},
		},
		"status from Config.Status": {
			plugin.Config{Info: plugin.Info{Name: "claude", Status: "stale"}, Backend: echo,
				Status: func(ctx context.Context) string {
					if ctx.Err() != nil {
						return "cancelled"
					}
					return "missing: npm install -g @anthropic-ai/claude-code"
				}},
			plugin.Info{Name: "claude", Kind: plugin.KindBackend, APIVersions: []string{"v1"}, Capabilities: []string{plugin.CapabilityRunEnv, plugin.CapabilitySandbox}, Status: "missing: npm install -g @anthropic-ai/claude-code"},
		},
		"fixed status": {
			plugin.Config{Info: plugin.Info{Name: "echo", Status: "ready"}, Backend: echo},
			plugin.Info{Name: "echo", Kind: plugin.KindBackend, APIVersions: []string{"v1"}, Capabilities: []string{plugin.CapabilityRunEnv, plugin.CapabilitySandbox}, Status: "ready"},
		},
		"docs with wrong kind and versions": {
			plugin.Config{Info: plugin.Info{Name: "file", Kind: "backend", APIVersions: []string{"v9"}}, Docs: noDocs{}},
			plugin.Info{Name: "file", Kind: plugin.KindDocs, APIVersions: []string{"v1"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := plugintest.Info(t, tc.cfg).GetInfo(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetInfo (-want +got):\n%s", diff)
			}
		})
	}
}
