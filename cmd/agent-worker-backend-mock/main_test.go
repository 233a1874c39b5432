package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/plugins/mock"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

// bin is the plugin binary, built once for the test process.
var bin string

func TestMain(m *testing.M) {
	var err error
	if bin, err = testkit.BuildE("cmd/agent-worker-backend-mock"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testkit.Main(m)
}

// start runs the binary as the daemon does and returns its client.
func start(t *testing.T) *goplugin.Client {
	t.Helper()
	c := goplugin.NewClient(pluginclient.ClientConfig(exec.Command(bin), hclog.NewNullLogger()))
	t.Cleanup(c.Kill)
	return c
}

func dispense(t *testing.T, c *goplugin.Client) backend.Backend {
	t.Helper()
	proto, err := c.Client()
	if err != nil {
		t.Fatalf("start the plugin: %v", err)
	}
	b, err := pluginclient.DispenseBackend(proto)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInfo(t *testing.T) {
	t.Parallel()
	proto, err := start(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	ic, err := pluginclient.DispenseInfo(proto)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ic.GetInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "mock" || info.Version != mock.Version || info.Kind != plugin.KindBackend {
		t.Errorf("info = %+v", info)
	}
}

// A crash step kills the process mid-run; the daemon's side of Run must
// end with an error, not hang.
func TestCrashEndsTheRun(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	req.Agent.Config = json.RawMessage(`{"script": [{"text": "about to die"}, {"crash": 3}, {"result": "never"}]}`)
	c := start(t)
	b := dispense(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var events []backend.Event
	err := b.Run(ctx, req, backend.EventsFunc(func(e backend.Event) error {
		events = append(events, e)
		return nil
	}))
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v), want an error as soon as the plugin died", err, ctx.Err())
	}
	for _, e := range events {
		if e.Kind == backend.EventResult {
			t.Errorf("the run got a result after the crash: %+v", e)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !c.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !c.Exited() {
		t.Error("the plugin process is still running after its crash step")
	}
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.Backend { return dispense(t, start(t)) },
		backendtest.WithHangingRequest(func(r backend.Request) backend.Request {
			r.Agent.Config = json.RawMessage(`{"script": [{"hang": true}]}`)
			return r
		}))
}
