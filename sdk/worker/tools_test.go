package worker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backendtest"
	daemontools "github.com/agent-worker/agent-worker/sdk/tools"
)

func TestToolsListsTheDaemonToolsWithSchemas(t *testing.T) {
	t.Parallel()
	c, _ := connect(t, backendtest.NewDaemon(t), "alice")
	tools, err := c.Tools(t.Context())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	byName := map[string]string{}
	for _, tool := range tools {
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("%s: schema: %v", tool.Name, err)
		}
		byName[tool.Name] = string(schema)
	}
	if len(byName) != len(daemontools.Names) {
		t.Errorf("Tools returned %d tools, want the daemon's %d: %v", len(byName), len(daemontools.Names), byName)
	}
	if s := byName["channel_send"]; !strings.Contains(s, `"message"`) {
		t.Errorf("channel_send schema = %s, want its message argument", s)
	}
}
