package host

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// After the database file is deleted under a running daemon, a send is
// refused with 503 and a message that says to restart (not acknowledged
// into the unlinked file), and status shows the problem.
func TestDeletedDatabaseRefusesSends(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	c, ctx := th.client(), context.Background()
	if _, err := c.Send(ctx, api.SendRequest{Target: "@global", Message: "saved"}); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Health(ctx); err != nil || !h.Store.Linked || h.Store.Failing || h.Store.Path != th.DB().Path() {
		t.Fatalf("store health before = %+v, %v", h.Store, err)
	}
	if err := os.Remove(th.DB().Path()); err != nil {
		t.Fatal(err)
	}

	status, e, _ := th.call(t, "POST", "/send", `{"target":"@global","message":"lost?"}`)
	want := "the database file " + th.DB().Path() + " was deleted or replaced"
	if status != http.StatusServiceUnavailable || e.Code != api.CodeUnavailable || !strings.Contains(e.Message, want) || !strings.Contains(e.Message, "restart the daemon") {
		t.Errorf("send after the delete: %d %+v; want 503 unavailable saying %q and to restart", status, e, want)
	}
	h, err := c.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Store.Linked || !h.Store.Failing || !strings.Contains(h.Store.LastError, want) || h.Store.LastErrorAt == nil {
		t.Errorf("store health after = %+v", h.Store)
	}
	if p := strings.Join(h.Problems, "\n"); !strings.Contains(p, "store: the database file "+th.DB().Path()+" was deleted or replaced") {
		t.Errorf("problems = %q, want the deleted database", h.Problems)
	}
	if ms, err := c.Peek(ctx, "@global", 10, 0); err != nil || len(ms) != 1 || ms[0].Content != "saved" {
		t.Errorf("channel = %+v, %v; want only the message sent before the delete", ms, err)
	}
}
