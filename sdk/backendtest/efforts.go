package backendtest

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// errNoEfforts is the fake's answer to the effort tools: its team has no
// skills, as a daemon without skills folders has none.
var errNoEfforts = errors.New("no skill found: the fake daemon has no skills folders (put skills in .agent-worker/skills/<name>/SKILL.md)")

// addEffortTools registers the fakes of the effort tools, which all fail
// as the daemon's do without skills or an active effort.
func (d *Daemon) addEffortTools(srv *mcp.Server, _ string) {
	tool(d, srv, tools.EffortStart, func(tools.EffortStartArgs) (tools.EffortResult, string, error) {
		return tools.EffortResult{}, "", errNoEfforts
	})
	tool(d, srv, tools.EffortContinue, func(tools.EffortContinueArgs) (tools.EffortResult, string, error) {
		return tools.EffortResult{}, "", errNoEfforts
	})
	tool(d, srv, tools.EffortStatus, func(tools.NoArgs) (tools.EffortResult, string, error) {
		return tools.EffortResult{}, "", errNoEfforts
	})
	tool(d, srv, tools.EffortLog, func(tools.EffortLogArgs) (tools.EffortResult, string, error) {
		return tools.EffortResult{}, "", errNoEfforts
	})
	tool(d, srv, tools.EffortFinish, func(tools.EffortFinishArgs) (tools.EffortResult, string, error) {
		return tools.EffortResult{}, "", errNoEfforts
	})
}
