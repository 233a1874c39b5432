package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// NewPreset is the backend of an agent CLI that speaks ACP
// (clis.ACPPresets): the acp backend with the CLI's ACP command as the
// default of config command, served under the CLI's own backend name
// (cmd/agent-worker-backend-gemini and the others).
func NewPreset(c clis.CLI) *Backend {
	b := New()
	b.preset = append([]string{c.Command}, c.ACP...)
	b.install, b.configEnv, b.cli = c.Install, c.ConfigEnv, c
	return b
}

// presetDefaults fills what the agent's config leaves out with the
// preset's: its env and whether it is offered our file system.
func (b *Backend) presetDefaults(cfg *config) {
	for k, v := range b.cli.Env {
		if _, set := cfg.Env[k]; !set {
			if cfg.Env == nil {
				cfg.Env = map[string]string{}
			}
			cfg.Env[k] = v
		}
	}
	if cfg.FS == nil && b.cli.NoFS {
		off := false
		cfg.FS = &off
	}
}

// configDir is the preset CLI's own config directory for a confined run
// (clis.CLI.ConfigEnv): in the agent's state directory, kept across
// runs so that session/load finds the conversation, unless the agent's
// env names one. "" when the run is not confined or needs none.
func (b *Backend) configDir(req backend.Request, env map[string]string) (string, error) {
	if b.configEnv == "" {
		return "", nil
	}
	dir, err := cli.ConfigDir(req, env, b.configEnv)
	if err != nil || dir == "" {
		return "", err
	}
	for name, content := range b.cli.ConfigFiles {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			continue // the agent's own by now
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", fmt.Errorf("acp: %s: %w", b.configEnv, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return "", fmt.Errorf("acp: %s: %w", b.configEnv, err)
		}
	}
	return dir, nil
}

// ServePreset serves the preset of c as a plugin binary (the thin mains
// of cmd/agent-worker-backend-gemini and the others).
func ServePreset(c clis.CLI) {
	plugin.Serve(plugin.Config{
		Info:    plugin.Info{Name: c.Backend, Version: Version},
		Backend: NewPreset(c),
		Status:  PresetStatus(c),
	})
}

// PresetStatus reports whether a preset's CLI is on PATH and its
// version, for `plugins` and `doctor`. The ACP adapters installed from
// npm have no --version: their version is their package's.
func PresetStatus(c clis.CLI) func(context.Context) string {
	return func(ctx context.Context) string {
		path, err := exec.LookPath(c.Command)
		if err != nil {
			return "missing: " + c.Install
		}
		if v := packageVersion(path); v != "" {
			return c.Command + " " + v + " at " + path
		}
		return cli.Status(ctx, c.Command, c.Install)
	}
}

// packageVersion is the version in the package.json of the npm package
// whose bin path is ("" when path is no npm package's): the first
// package.json above the file the bin link points at.
func packageVersion(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(real)
	for range 4 {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var p struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			}
			if json.Unmarshal(b, &p) == nil && p.Name != "" {
				return p.Version
			}
		}
		dir = filepath.Dir(dir)
	}
	return ""
}
