package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/gate"
	"github.com/agent-worker/agent-worker/host/mcpserver"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

var (
	alice = store.AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}
	bob   = store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}
)

// gated is an MCP server with the daemon's gate over a fresh store, alice
// in an effort of the example skill in phase, bob in none, and a token
// of each.
type gated struct {
	url              string
	db               *store.DB
	effort           store.Effort
	aliceTok, bobTok string
}

func newGated(t testing.TB, phase int) *gated {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "aw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, k := range []store.AgentKey{alice, bob} {
		if _, err := db.CreateAgent(ctx, store.Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag, Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	s, err := skill.Parse("", b)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := db.StartEffort(ctx, store.NewEffort{Agent: alice, Dir: t.TempDir(), Skill: s.Name, Snapshot: skill.Snapshot("implement/SKILL.md", b),
		Phases: s.PhaseNames(), Nonce: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	for e.Phase < phase {
		if e, err = db.AdvanceEffort(ctx, store.Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: fmt.Sprint("n", e.Phase+1)}); err != nil {
			t.Fatal(err)
		}
	}
	log := hclog.NewNullLogger()
	srv := mcpserver.New(team.New(team.Config{DB: db, Logger: log}), db, nil, log)
	srv.Gate = gate.New(db, log)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	mux.Handle("/mcp/gate", srv)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	g := &gated{url: ts.URL + "/mcp", db: db, effort: e}
	if g.aliceTok, err = db.CreateToken(ctx, alice, ""); err != nil {
		t.Fatal(err)
	}
	if g.bobTok, err = db.CreateToken(ctx, bob, ""); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *gated) daemon(token string) backend.MCPServer {
	return backend.MCPServer{Name: "agent-worker", URL: g.url, Headers: map[string]string{"Authorization": "Bearer " + token}}
}

// The gate endpoint decides for the token's agent, never for one a body
// names; bad requests are refused with the error vocabulary; a daemon
// that cannot be asked refuses the call.
func TestGateEndpoint(t *testing.T) {
	t.Parallel()
	g := newGated(t, 0)
	ctx := t.Context()
	write := tools.GateCall{Tool: "write_file", Path: filepath.Join(g.effort.Dir, "main.go")}

	d := worker.NewGate(g.daemon(g.aliceTok)).Gate(ctx, write)
	if d.Allowed || !strings.Contains(d.Reason, "phase plan of skill implement does not allow write_file") {
		t.Errorf("alice writing in plan: %+v, want refused with the phase's reason", d)
	}
	if d := worker.NewGate(g.daemon(g.aliceTok)).Gate(ctx, tools.GateCall{Tool: "write_file", Path: filepath.Join(g.effort.Dir, "1_IMPLEMENT_PLAN.md")}); !d.Allowed {
		t.Errorf("alice writing her plan: %+v, want allowed", d)
	}
	// Bob's token asks for bob, whatever the body says.
	status, body := post(t, g.url+"/gate", g.bobTok, `{"tool":"write_file","path":"main.go","agent":"alice@wf:main"}`)
	if status != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Errorf("bob's token naming alice: %d %s, want bob's answer (allowed)", status, body)
	}
	for name, tc := range map[string]struct {
		token, body string
		status      int
		says        string
	}{
		"no token":      {"", `{"tool":"write_file"}`, http.StatusUnauthorized, "missing bearer token"},
		"unknown token": {"nope", `{"tool":"write_file"}`, http.StatusUnauthorized, "unknown or revoked"},
		"not JSON":      {g.aliceTok, `tool=write_file`, http.StatusBadRequest, "takes a JSON object"},
		"no tool":       {g.aliceTok, `{"command":"ls"}`, http.StatusBadRequest, "names no tool"},
	} {
		status, body := post(t, g.url+"/gate", tc.token, tc.body)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", name, status, body, tc.status, tc.says)
		}
	}
	// Nothing listens there any more: refused, and the reason says why.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	d = worker.NewGate(backend.MCPServer{URL: dead.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + g.aliceTok}}).Gate(ctx, tools.GateCall{Tool: "read_file"})
	if d.Allowed || !strings.Contains(d.Reason, "could not be asked") {
		t.Errorf("unreachable daemon: %+v, want refused saying the gate could not be asked", d)
	}
	// A revoked token (the run ended) is no way in either.
	if err := g.db.RevokeToken(ctx, g.aliceTok); err != nil {
		t.Fatal(err)
	}
	if d := worker.NewGate(g.daemon(g.aliceTok)).Gate(ctx, tools.GateCall{Tool: "read_file"}); d.Allowed {
		t.Errorf("revoked token: %+v, want refused", d)
	}
}

// The daemon's own tools are gated in process by the same decision: a
// tool the phase's allow list lacks is a tool error with its reason, one
// it allows runs, and an outside agent's call is evidence.
func TestDaemonToolsGated(t *testing.T) {
	t.Parallel()
	g := newGated(t, 3) // verify: allow list with channel_send, not team_members
	ctx := t.Context()
	c, err := worker.Connect(ctx, g.daemon(g.aliceTok))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = c.Call(ctx, tools.TeamMembers, nil)
	var te *worker.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "phase verify of skill implement does not allow team_members: team_members is not in its allow list") {
		t.Fatalf("team_members in verify: %v, want the phase's refusal", err)
	}
	if _, _, err := c.Call(ctx, tools.ChannelSend, map[string]any{"message": "verifying"}); err != nil {
		t.Fatalf("channel_send in verify: %v", err)
	}
	obs, err := g.db.Observations(ctx, g.effort.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 1 || obs[0].Kind != store.ObservedTool || obs[0].Subject != tools.ChannelSend {
		t.Errorf("observations = %+v, want channel_send only (a refused call is none)", obs)
	}
	// Bob walks no effort: nothing of his is gated.
	cb, err := worker.Connect(ctx, g.daemon(g.bobTok))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	if _, _, err := cb.Call(ctx, tools.TeamMembers, nil); err != nil {
		t.Errorf("bob's team_members: %v", err)
	}
}

func post(t testing.TB, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// BenchmarkGateEndpoint is a plugin's question to the gate, round trip
// over loopback HTTP: the token's lookup, the decision, the answer.
func BenchmarkGateEndpoint(b *testing.B) {
	g := newGated(b, 3)
	gt := worker.NewGate(g.daemon(g.aliceTok))
	ctx := context.Background()
	call := tools.GateCall{Tool: "run_shell", Command: "go test ./..."}
	for b.Loop() {
		if d := gt.Gate(ctx, call); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}
