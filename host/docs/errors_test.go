package docs

import (
	"errors"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

// The plugin boundary: a provider's sdk error class comes out as the
// daemon's code.
func TestProviderErrorsBecomeCodes(t *testing.T) {
	t.Parallel()
	p := coded{docprovider.Failing(sdk.Errorf(sdk.ErrNotFound, "no such document"))}
	if _, err := p.Read(t.Context(), docprovider.Ref{Workflow: "global", Tag: "main", Path: "x.md"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("provider Read: %v (%s)", err, api.ErrorCode(err))
	}
	if err := p.Write(t.Context(), docprovider.Ref{Workflow: "global", Tag: "main", Path: "x.md"}, "x"); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("provider Write: %v", err)
	}
}
