package backendtest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// The fake daemon offers a run exactly the tools the real one does
// (tools.Names, which host/mcpserver is checked against too), so a backend
// tested against it sees no tool the daemon lacks and misses none it has.
func TestDaemonServesToolsNames(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	ctx := context.Background()
	c, err := worker.Connect(ctx, d.Request("alice").Daemon)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	served, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range served {
		got = append(got, tl.Name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tools.Names))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fake daemon's tools differ from tools.Names (-tools.Names +served):\n%s", diff)
	}
}
