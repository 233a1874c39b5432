package pluginclient_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
)

// memory is a small Provider kept in a map: enough to run the conformance
// suite through gRPC without importing a real provider (sdk stays
// standalone). mu guards the field that follows.
type memory struct {
	mu   sync.Mutex
	docs map[docprovider.Scope]map[string]memDoc
}

type memDoc struct {
	content string
	at      time.Time
}

var _ docprovider.Provider = (*memory)(nil)

func newMemory() *memory { return &memory{docs: map[docprovider.Scope]map[string]memDoc{}} }

func (m *memory) scope(r docprovider.Ref) map[string]memDoc {
	s := docprovider.Scope{Workflow: r.Workflow, Tag: r.Tag}
	if m.docs[s] == nil {
		m.docs[s] = map[string]memDoc{}
	}
	return m.docs[s]
}

func (m *memory) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	if err := docprovider.ValidateRef(r); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.scope(r)[r.Path]
	if !ok {
		return "", sdk.Errorf(sdk.ErrNotFound, "document %s does not exist", r.Path)
	}
	return d.content, nil
}

// put stores next(old) after the checks every write shares.
func (m *memory) put(r docprovider.Ref, next func(old string, exists bool) (string, error)) error {
	if err := docprovider.ValidateRef(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	docs := m.scope(r)
	old, exists := docs[r.Path]
	content, err := next(old.content, exists)
	if err != nil {
		return err
	}
	if err := docprovider.CheckSize(r.Path, int64(len(content))); err != nil {
		return err
	}
	docs[r.Path] = memDoc{content, time.Now()}
	return nil
}

func (m *memory) Write(ctx context.Context, r docprovider.Ref, content string) error {
	return m.put(r, func(string, bool) (string, error) { return content, nil })
}

func (m *memory) Append(ctx context.Context, r docprovider.Ref, content string) error {
	return m.put(r, func(old string, _ bool) (string, error) { return old + content, nil })
}

func (m *memory) Create(ctx context.Context, r docprovider.Ref, content string) error {
	return m.put(r, func(_ string, exists bool) (string, error) {
		if exists {
			return "", sdk.Errorf(sdk.ErrConflict, "document %s already exists", r.Path)
		}
		return content, nil
	})
}

func (m *memory) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	if err := docprovider.ValidateScope(s); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []docprovider.Info{}
	for _, p := range slices.Sorted(maps.Keys(m.docs[s])) {
		d := m.docs[s][p]
		out = append(out, docprovider.Info{Path: p, Size: int64(len(d.content)), UpdatedAt: d.at})
	}
	return out, nil
}

// The test provider itself conforms, so that a failure over gRPC is the
// protocol's.
func TestMemoryConformance(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider { return newMemory() })
}

func TestConformanceOverGRPC(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider { return serveDocs(t, newMemory()) })
}

// fake is a Provider made of functions, for the failures a real one
// rarely produces.
type fake struct {
	read func(ctx context.Context, r docprovider.Ref) (string, error)
	err  error // returned by every other method
}

func (f fake) Read(ctx context.Context, r docprovider.Ref) (string, error) { return f.read(ctx, r) }
func (f fake) Write(context.Context, docprovider.Ref, string) error        { return f.err }
func (f fake) Append(context.Context, docprovider.Ref, string) error       { return f.err }
func (f fake) Create(context.Context, docprovider.Ref, string) error       { return f.err }
func (f fake) List(context.Context, docprovider.Scope) ([]docprovider.Info, error) {
	return nil, f.err
}

// Every method's error reaches the daemon with its class and exact text.
func TestErrorsKeepClassAndText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err   error
		class error
	}{
		"not found":   {sdk.Errorf(sdk.ErrNotFound, "document %q does not exist", "x.md"), sdk.ErrNotFound},
		"conflict":    {sdk.Errorf(sdk.ErrConflict, "notes.md already exists"), sdk.ErrConflict},
		"invalid":     {sdk.Errorf(sdk.ErrInvalid, "document name %q is absolute", "/x.md"), sdk.ErrInvalid},
		"permission":  {sdk.Errorf(sdk.ErrPermission, "notes.md escapes the documents folder"), sdk.ErrPermission},
		"unavailable": {sdk.Errorf(sdk.ErrUnavailable, "database is locked; try again"), sdk.ErrUnavailable},
		"plain":       {errors.New("disk on fire"), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := serveDocs(t, fake{
				read: func(context.Context, docprovider.Ref) (string, error) { return "", tc.err },
				err:  tc.err,
			})
			ctx, r := t.Context(), docprovider.Ref{Workflow: "w", Tag: "t", Path: "notes.md"}
			_, readErr := p.Read(ctx, r)
			infos, listErr := p.List(ctx, docprovider.Scope{Workflow: "w", Tag: "t"})
			if infos != nil {
				t.Errorf("List returned %v with an error", infos)
			}
			for op, err := range map[string]error{
				"Read": readErr, "Write": p.Write(ctx, r, "x"), "Append": p.Append(ctx, r, "x"),
				"Create": p.Create(ctx, r, "x"), "List": listErr,
			} {
				if err == nil {
					t.Errorf("%s = nil, want %v", op, tc.err)
					continue
				}
				if err.Error() != tc.err.Error() {
					t.Errorf("%s text = %q, want %q", op, err, tc.err)
				}
				if sdk.Class(err) != tc.class || (tc.class != nil && !errors.Is(err, tc.class)) {
					t.Errorf("%s class = %v, want %v", op, sdk.Class(err), tc.class)
				}
			}
		})
	}
}

// A daemon call that is cancelled (a request that went away) cancels the
// provider's work too.
func TestCancelReachesProvider(t *testing.T) {
	t.Parallel()
	started, stopped := make(chan struct{}), make(chan error, 1)
	p := serveDocs(t, fake{read: func(ctx context.Context, _ docprovider.Ref) (string, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return "", ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := p.Read(ctx, docprovider.Ref{Workflow: "w", Tag: "t", Path: "notes.md"})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the provider's Read to start")
	}
	cancel()
	for what, ch := range map[string]chan error{"the provider to see the cancellation": stopped, "Read to return": done} {
		select {
		case err := <-ch:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want context.Canceled", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
