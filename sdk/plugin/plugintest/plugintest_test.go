package plugintest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
)

// A backend behind plugintest streams its events and keeps its error's
// class, text and Permanent mark: plugintest calls it with the daemon's
// client (sdk/wire/client), which converts with sdk/wire.
func TestBackendOverTheWire(t *testing.T) {
	t.Parallel()
	b := plugintest.Backend(t, backend.Func(func(ctx context.Context, req backend.Request, ev backend.Events) error {
		if err := ev.Send(backend.Event{Kind: backend.EventText, Text: "hi " + req.Agent.Name}); err != nil {
			return err
		}
		return backend.Permanent(sdk.Errorf(sdk.ErrPermission, "no key for %s", req.Agent.Name))
	}))
	var got []backend.Event
	err := b.Run(t.Context(), backend.Request{Agent: backend.Agent{Name: "alice"}}, backend.EventsFunc(func(e backend.Event) error {
		got = append(got, e)
		return nil
	}))
	if diff := cmp.Diff([]backend.Event{{Kind: backend.EventText, Text: "hi alice"}}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !errors.Is(err, sdk.ErrPermission) || !backend.IsPermanent(err) || err.Error() != "no key for alice" {
		t.Errorf("Run error = %v (permission %v, permanent %v), want the plugin's permanent permission error", err, errors.Is(err, sdk.ErrPermission), backend.IsPermanent(err))
	}
}

// notFound is a provider whose every document is missing.
type notFound struct{ docprovider.Provider }

func (notFound) Read(_ context.Context, r docprovider.Ref) (string, error) {
	return "", sdk.Errorf(sdk.ErrNotFound, "document %s not found", r.Path)
}

func TestDocsOverTheWire(t *testing.T) {
	t.Parallel()
	_, err := plugintest.Docs(t, notFound{}).Read(t.Context(), docprovider.Ref{Workflow: "w", Path: "notes.md"})
	if !errors.Is(err, sdk.ErrNotFound) || err.Error() != "document notes.md not found" {
		t.Errorf("Read error = %v, want the provider's not-found error", err)
	}
}
