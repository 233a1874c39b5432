package store

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// mintToken creates a token that must be created and look like one.
func mintToken(t *testing.T, db *DB, k AgentKey, run string) string {
	t.Helper()
	tok, err := db.CreateToken(t.Context(), k, run)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^awt_[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("token %q does not look like awt_ + 64 hex digits", tok)
	}
	return tok
}

func TestTokens(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	db := openAt(t, testPath(t), Options{Now: clk.Now})
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice", "bob")
	alice, bob := AgentKey{"alice", "team", "t"}, AgentKey{"bob", "team", "t"}

	mint := func(k AgentKey, run string) string { t.Helper(); return mintToken(t, db, k, run) }
	live := func(tok string) bool {
		t.Helper()
		_, err := db.LookupToken(ctx, tok)
		if err != nil && contract.ErrorCode(err) != contract.CodeNotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	a1, a2, a3, b1 := mint(alice, "run-1"), mint(alice, "run-2"), mint(alice, "run-3"), mint(bob, "run-1")
	if a1 == a2 {
		t.Fatal("two tokens are equal")
	}

	got, err := db.LookupToken(ctx, a2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Token{Key: alice, RunID: "run-2", CreatedAt: clk.Now()}, got); diff != "" {
		t.Errorf("LookupToken (-want +got):\n%s", diff)
	}

	// Only hashes are stored.
	var rows []string
	err = db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT token_sha256 || ' ' || agent || ' ' || workflow || ' ' || tag || ' ' || run_id FROM agent_tokens`,
			&execOptions{ResultFunc: func(s row) error { rows = append(rows, s.ColumnText(0)); return nil }})
	})
	if err != nil || len(rows) != 4 {
		t.Fatalf("agent_tokens: %d rows, %v", len(rows), err)
	}
	for _, tok := range []string{a1, a2, a3, b1} {
		for _, row := range rows {
			if strings.Contains(row, tok[len("awt_"):]) {
				t.Errorf("agent_tokens holds a plaintext token: %q", row)
			}
		}
		if n := queryInt(t, db, `SELECT count(*) FROM agent_tokens WHERE token_sha256 = ?`, hashToken(tok)); n != 1 {
			t.Errorf("token is not stored by its sha256")
		}
	}

	if err := db.RevokeToken(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(ctx, a1); err != nil {
		t.Errorf("revoking a revoked token: %v", err)
	}
	if n, err := db.RevokeRunTokens(ctx, "run-1"); err != nil || n != 1 {
		t.Errorf("RevokeRunTokens(run-1) = %d, %v; want 1 (alice's was already revoked)", n, err)
	}
	if got := map[string]bool{"a1": live(a1), "a2": live(a2), "a3": live(a3), "b1": live(b1)}; !cmp.Equal(got,
		map[string]bool{"a1": false, "a2": true, "a3": true, "b1": false}) {
		t.Errorf("live tokens after revoking a1 and run-1: %v", got)
	}
	if n, err := db.RevokeAgentTokens(ctx, alice); err != nil || n != 2 {
		t.Errorf("RevokeAgentTokens(alice) = %d, %v; want 2", n, err)
	}
	if live(a2) || live(a3) {
		t.Error("alice's tokens survive RevokeAgentTokens")
	}

	// A deleted agent's token dies with it.
	b2 := mint(bob, "run-4")
	if !live(b2) {
		t.Fatal("new token of bob is not live")
	}
	if err := db.DeleteAgent(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if live(b2) {
		t.Error("token of a deleted agent still authenticates")
	}

	for name, tc := range map[string]struct {
		call func() error
		code contract.Code
	}{
		"lookup unknown":      {func() error { _, err := db.LookupToken(ctx, "awt_"+strings.Repeat("0", 64)); return err }, contract.CodeNotFound},
		"lookup malformed":    {func() error { _, err := db.LookupToken(ctx, ""); return err }, contract.CodeNotFound},
		"revoke unknown":      {func() error { return db.RevokeToken(ctx, "awt_nope") }, contract.CodeNotFound},
		"create for unknown":  {func() error { _, err := db.CreateToken(ctx, bob, "run-5"); return err }, contract.CodeNotFound},
		"revoke empty run id": {func() error { _, err := db.RevokeRunTokens(ctx, ""); return err }, contract.CodeInvalid},
	} {
		if err := tc.call(); contract.ErrorCode(err) != tc.code {
			t.Errorf("%s: err = %v, want code %q", name, err, tc.code)
		}
	}
	if _, err := db.LookupToken(ctx, a2); err == nil || strings.Contains(err.Error(), a2) {
		t.Errorf("lookup of a revoked token: err = %v; want one that does not repeat the token", err)
	}
}

// Stopping an agent ends its outside tokens (mcp-config) but not the token
// of a run in flight, which finishes its work; a stopped agent gets no new
// outside token until it runs again.
func TestStoppedAgentLosesOutsideTokens(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice", "bob")
	alice, bob := AgentKey{"alice", "team", "t"}, AgentKey{"bob", "team", "t"}
	mint := func(k AgentKey, run string) string { t.Helper(); return mintToken(t, db, k, run) }
	outside, inRun, bobs := mint(alice, ""), mint(alice, "run-1"), mint(bob, "")
	if err := db.SetAgentState(ctx, alice, "stopped", ""); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tok  string
		live bool
	}{"alice's outside token": {outside, false}, "alice's run token": {inRun, true}, "bob's outside token": {bobs, true}} {
		if _, err := db.LookupToken(ctx, c.tok); (err == nil) != c.live {
			t.Errorf("%s after alice stopped: lookup error %v, want live %v", name, err, c.live)
		}
	}
	if _, err := db.CreateToken(ctx, alice, ""); contract.ErrorCode(err) != contract.CodeConflict || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("outside token for a stopped agent: %v; want a conflict saying it is stopped", err)
	}
	if _, err := db.CreateToken(ctx, AgentKey{"carol", "team", "t"}, ""); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("token for a missing agent: %v; want not found", err)
	}
	if err := db.SetAgentState(ctx, alice, "idle", ""); err != nil {
		t.Fatal(err)
	}
	fresh := mint(alice, "")
	if _, err := db.LookupToken(ctx, fresh); err != nil {
		t.Errorf("new token after alice runs again: %v", err)
	}
	if _, err := db.LookupToken(ctx, outside); err == nil {
		t.Errorf("the token revoked by the stop came back")
	}
}

// Every way a token dies ends it at once, even when LookupToken has just
// found it (and remembered it).
func TestCachedTokensDieAtOnce(t *testing.T) {
	t.Parallel()
	for name, kill := range map[string]func(db *DB, k AgentKey, tok string) error{
		"revoke": func(db *DB, _ AgentKey, tok string) error { return db.RevokeToken(t.Context(), tok) },
		"run ends": func(db *DB, _ AgentKey, _ string) error {
			_, err := db.RevokeRunTokens(t.Context(), "run_1")
			return err
		},
		"run finished": func(db *DB, _ AgentKey, _ string) error {
			return db.FinishRun(t.Context(), "run_1", contract.RunFailed, "boom", nil)
		},
		"agent stops": func(db *DB, k AgentKey, _ string) error {
			return db.SetAgentState(t.Context(), k, contract.AgentStopped, "")
		},
		"agent revoked": func(db *DB, k AgentKey, _ string) error {
			_, err := db.RevokeAgentTokens(t.Context(), k)
			return err
		},
		"agent deleted":    func(db *DB, k AgentKey, _ string) error { return db.DeleteAgent(t.Context(), k) },
		"workflow deleted": func(db *DB, k AgentKey, _ string) error { return db.DeleteWorkflow(t.Context(), k.Workflow, k.Tag) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openTest(t)
			createTeam(t, db, Scope{"team", "t"}, "alice")
			alice := AgentKey{"alice", "team", "t"}
			run := ""
			if name == "run ends" || name == "run finished" || name == "revoke" {
				run = "run_1"
			}
			tok := mintToken(t, db, alice, run)
			for range 2 { // the second lookup is served from the cache
				if got, err := db.LookupToken(t.Context(), tok); err != nil || got.Key != alice {
					t.Fatalf("LookupToken = %v, %v", got, err)
				}
			}
			if err := kill(db, alice, tok); err != nil {
				t.Fatal(err)
			}
			if _, err := db.LookupToken(t.Context(), tok); contract.ErrorCode(err) != contract.CodeNotFound {
				t.Errorf("token after it died: err = %v, want not found", err)
			}
		})
	}
}

// A run's token dies with its run, whatever ends it (issue 27): a normal
// end, a settle, the start-up sweep of a dead daemon's runs; and a token
// whose run has ended is refused even where its revocation was missed.
func TestRunTokenDiesWithItsRun(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	createTeam(t, db, Scope{"team", "t"}, "alice")
	alice := AgentKey{"alice", "team", "t"}
	start := func(id string) string {
		t.Helper()
		if _, err := db.StartRun(ctx, Run{ID: id, Agent: alice, Backend: "mock", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		tok := mintToken(t, db, alice, id)
		if _, err := db.LookupToken(ctx, tok); err != nil {
			t.Fatalf("the token of running %s: %v", id, err)
		}
		return tok
	}
	dead := func(what, tok string) {
		t.Helper()
		if _, err := db.LookupToken(ctx, tok); contract.ErrorCode(err) != contract.CodeNotFound {
			t.Errorf("the token of a run %s: err = %v, want it refused as not found", what, err)
		}
	}

	finished := start("run_finished")
	if err := db.FinishRun(ctx, "run_finished", contract.RunFailed, "boom", nil); err != nil {
		t.Fatal(err)
	}
	dead("that failed", finished)

	settled := start("run_settled")
	if _, err := db.SettleRun(ctx, Settlement{RunID: "run_settled"}); err != nil {
		t.Fatal(err)
	}
	dead("that was settled", settled)

	swept := start("run_swept")
	if n, err := db.FailRunningRuns(ctx, "the daemon stopped during this run"); err != nil || n != 1 {
		t.Fatalf("FailRunningRuns = %d, %v; want 1", n, err)
	}
	dead("that a dead daemon left", swept)
	var live int
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT count(*) FROM agent_tokens WHERE revoked_at = 0 AND run_id <> ''`,
			&execOptions{ResultFunc: func(s row) error { live = s.ColumnInt(0); return nil }})
	})
	if err != nil || live != 0 {
		t.Errorf("%d run tokens are not revoked (%v); want every ended run's revoked with it", live, err)
	}

	// A revocation that was missed (a write lost with an old daemon):
	// the run's state still refuses the token.
	missed := start("run_missed")
	err = db.write(ctx, func(conn querier) error {
		return conn.execute(`UPDATE runs SET state = 'failed', ended_at = 1 WHERE id = 'run_missed'`, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.tokens.forget()
	dead("whose revocation was missed", missed)

	// An outside agent's token has no run and lives on.
	outside := mintToken(t, db, alice, "")
	if _, err := db.LookupToken(ctx, outside); err != nil {
		t.Errorf("an outside agent's token: %v", err)
	}
}

// A run's token is minted with its row and dies with the run's end.
func TestStartRunWithToken(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	alice, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main", Backend: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	run, token, err := db.StartRunWithToken(ctx, Run{ID: "run-t", Agent: alice.Key(), Backend: "mock"})
	if err != nil || run.State != contract.RunRunning || token == "" {
		t.Fatalf("StartRunWithToken = %+v, %q, %v", run, token, err)
	}
	tok, err := db.LookupToken(ctx, token)
	if err != nil || tok.Key != alice.Key() || tok.RunID != "run-t" {
		t.Fatalf("LookupToken of the run's token = %+v, %v", tok, err)
	}
	if err := db.FinishRun(ctx, "run-t", contract.RunSucceeded, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LookupToken(ctx, token); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("the token of an ended run: %v, want not found", err)
	}
	if _, _, err := db.StartRunWithToken(ctx, Run{ID: "run-u", Agent: AgentKey{Name: "ghost", Workflow: "global", Tag: "main"}, Backend: "mock"}); err == nil {
		t.Error("a run of an agent that does not exist got a token")
	}
	if _, _, err := db.GetRun(ctx, "run-u"); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("the refused run was recorded anyway: %v", err)
	}
}
