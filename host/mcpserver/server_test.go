package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// A panicking or failing handler becomes a tool error; the server keeps
// serving, and internal details never reach the caller. Every call, a
// panic included, is heard once with its outcome (the daemon's metrics).
func TestToolErrorsAndPanics(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var heard []string
	s := &Server{log: hclog.NewNullLogger(), onTool: func(tool string, _ time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, fmt.Sprintf("%s ok=%v", tool, err == nil))
	}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	me := store.AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	calls := 0
	tool(s, srv, me, "boom", "panics on the first call", func(context.Context, tools.NoArgs) (tools.AckResult, string, error) {
		if calls++; calls == 1 {
			panic("nil map write at internal/secret.go:42")
		}
		return tools.AckResult{Cursor: 7}, "fine", nil
	})
	tool(s, srv, me, "user_error", "", func(context.Context, tools.NoArgs) (tools.AckResult, string, error) {
		return tools.AckResult{}, "", api.Errorf(api.CodeInvalid, "limit must be between 1 and 200")
	})
	tool(s, srv, me, "internal_error", "", func(context.Context, tools.NoArgs) (tools.AckResult, string, error) {
		return tools.AckResult{}, "", errors.New("sqlite: disk I/O error at /var/db")
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	text := func(name string) (string, bool) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatalf("%s: protocol error %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if got, isErr := text("boom"); !isErr || !strings.Contains(got, "internal error in boom") || strings.Contains(got, "secret.go") {
		t.Errorf("panicking tool: %v %q", isErr, got)
	}
	if got, isErr := text("boom"); isErr || got != "fine" {
		t.Errorf("after a panic the tool answers %v %q, want fine", isErr, got)
	}
	if got, isErr := text("user_error"); !isErr || got != "limit must be between 1 and 200" {
		t.Errorf("user error: %v %q", isErr, got)
	}
	if got, isErr := text("internal_error"); !isErr || strings.Contains(got, "/var/db") || !strings.Contains(got, "internal error") {
		t.Errorf("internal error leaked or missing: %v %q", isErr, got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"boom ok=false", "boom ok=true", "user_error ok=false", "internal_error ok=false"}
	if !slices.Equal(heard, want) {
		t.Errorf("tool calls heard = %q, want %q", heard, want)
	}
}
