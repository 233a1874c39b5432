package api

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the agent-worker release; Commit and BuildTime are what it
// was built from and when. `make` sets all three with -ldflags "-X
// github.com/agent-worker/agent-worker/host/api.Version=v1.2.3 …"; a
// binary built by `go install` without them gets them from its build
// info (the module's version, and the commit and its time when it was
// built in a checkout).
var (
	Version   = ""
	Commit    = ""
	BuildTime = ""
)

// Module is agent-worker's Go module, what `go install` names.
const Module = "github.com/agent-worker/agent-worker"

// devVersion is the version of a binary that knows no better: built by
// `go build` or `go test` in a checkout without make's flags.
const devVersion = "0.1.0-dev"

func init() { Version, Commit, BuildTime = fromBuildInfo(Version, Commit, BuildTime) }

// fromBuildInfo fills in what the linker flags left empty from the
// binary's build info.
func fromBuildInfo(version, commit, built string) (string, string, string) {
	info, ok := debug.ReadBuildInfo()
	if ok {
		if version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if built == "" {
					built = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit != "" && !strings.HasSuffix(commit, "-dirty") {
			commit += "-dirty"
		}
	}
	if version == "" {
		version = devVersion
	}
	return version, commit, built
}

// VersionText is what `agent-worker --version` prints.
func VersionText() string {
	or := func(s, none string) string {
		if s == "" {
			return none
		}
		return s
	}
	return fmt.Sprintf("agent-worker %s\ncommit:  %s\nbuilt:   %s\ngo:      %s %s/%s\n",
		Version, or(Commit, "unknown"), or(BuildTime, "unknown"), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

var release = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// InstallVersion is the version to name in an install command for a
// plugin of this build: the release itself, or latest for a build that
// is not one.
func InstallVersion() string {
	if release.MatchString(Version) {
		return Version
	}
	return "latest"
}
