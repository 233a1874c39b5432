package main_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agent-worker/agent-worker/host/pluginclient"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// bin is the plugin binary, built once for the test process.
var bin string

// TestMain builds the plugin. The shared PostgreSQL cluster stops with the
// test binary (pgtest's watchdog), since pgtest.Main would exit before the
// binary is removed.
func TestMain(m *testing.M) {
	var err error
	if bin, err = testkit.BuildE("cmd/agent-worker-docs-postgres"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testkit.Main(m)
}

// start runs the binary as the daemon does, with only env, and returns
// its client.
func start(t *testing.T, env ...string) goplugin.ClientProtocol {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	c := goplugin.NewClient(pluginclient.ClientConfig(cmd, hclog.NewNullLogger()))
	t.Cleanup(c.Kill)
	proto, err := c.Client()
	if err != nil {
		t.Fatalf("start the plugin: %v", err)
	}
	return proto
}

// docs starts the plugin on the database at dsn.
func docs(t *testing.T, dsn string) docprovider.Provider {
	t.Helper()
	p, err := pluginclient.DispenseDocs(start(t, "AGENT_WORKER_DOCS_URL="+dsn))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var notes = docprovider.Ref{Workflow: "review", Tag: "main", Path: "notes.md"}

// The catalog fingerprints the plugin without any setting: it must still
// say who it is.
func TestInfo(t *testing.T) {
	t.Parallel()
	ic, err := pluginclient.DispenseInfo(start(t))
	if err != nil {
		t.Fatal(err)
	}
	info, err := ic.GetInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "postgres" || info.Kind != plugin.KindDocs {
		t.Errorf("info = %+v, want the docs plugin postgres", info)
	}
}

// Started without its database, the plugin answers every call with an
// error that names the missing variable, instead of dying unexplained.
func TestMissingURL(t *testing.T) {
	t.Parallel()
	p, err := pluginclient.DispenseDocs(start(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Read(t.Context(), notes)
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "AGENT_WORKER_DOCS_URL is not set") {
		t.Errorf("Read = %v, want sdk.ErrInvalid naming AGENT_WORKER_DOCS_URL", err)
	}
	if _, err := p.List(t.Context(), docprovider.Scope{Workflow: "review", Tag: "main"}); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("List = %v, want sdk.ErrInvalid", err)
	}
}

// A malformed URL is reported on use, without its password.
func TestMalformedURL(t *testing.T) {
	t.Parallel()
	p, err := pluginclient.DispenseDocs(start(t, "AGENT_WORKER_DOCS_URL=postgres://docs:s3cret@127.0.0.1:notaport/db"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Write(t.Context(), notes, "x")
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "documents database URL") {
		t.Errorf("Write = %v, want sdk.ErrInvalid about the URL", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the password", err)
	}
}

// The real binary conforms, one plugin process and database per subtest.
func TestConformanceThroughThePlugin(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return docs(t, pgtest.Shared(t).NewDatabase(t))
	})
}

// Two daemons each run the plugin on the cluster's database: both serve
// the same documents.
func TestTwoPluginsShareDocuments(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := docs(t, dsn), docs(t, dsn)
	if err := a.Write(t.Context(), notes, "written by a"); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(t.Context(), notes, ", appended by b"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Read(t.Context(), notes); err != nil || got != "written by a, appended by b" {
		t.Errorf("a reads %q, %v; want both daemons' text", got, err)
	}
}
