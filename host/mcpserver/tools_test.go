package mcpserver

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// An agent's server offers exactly tools.Names: the list workers, the sdk
// backend and sdk/backendtest's fake daemon are written against.
func TestServesToolsNames(t *testing.T) {
	t.Parallel()
	s := New(nil, nil, nil, hclog.NewNullLogger())
	me := store.AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	r := httptest.NewRequest("POST", "/mcp", nil)
	srv := s.serverFor(r.WithContext(context.WithValue(r.Context(), ctxKey{}, me)))
	if srv == nil {
		t.Fatal("no server for an authenticated agent")
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var got []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tl.Name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tools.Names))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("served tools differ from tools.Names (-tools.Names +served):\n%s", diff)
	}
}
