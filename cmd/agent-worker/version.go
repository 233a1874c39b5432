package main

import (
	"context"
	"flag"
	"runtime"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// versionInfo is `agent-worker version --json`: what --version prints, for
// scripts and bug reports.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Built   string `json:"built,omitempty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// versionCmd is `agent-worker version`, beside the root's --version and
// printing the same text.
func versionCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.BoolVar(&e.json, "json", false, "print JSON instead of text")
	return leaf("version", "version [--json]",
		"print the version of this agent-worker: release, commit, build time and Go (the same as --version)", fs, [2]int{0, 0},
		func(context.Context, []string) error {
			if e.json {
				return e.printJSON(versionInfo{Version: api.Version, Commit: api.Commit, Built: api.BuildTime,
					Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH})
			}
			e.printf("%s", api.VersionText())
			return nil
		})
}
