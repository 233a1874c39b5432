package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// tokenPrefix marks agent tokens so that one pasted into the wrong place
// (or found by a secret scanner) is recognisable.
const tokenPrefix = "awt_"

// Token is what a bearer token proves: which agent a caller may act as, and
// for which run (invariant 5).
type Token struct {
	Key       AgentKey
	RunID     string
	CreatedAt time.Time
}

// hashToken is the only form of a token the database holds, so a copy of
// the file does not let anyone act as an agent.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateToken mints a bearer token for one run of an agent, or (runID "")
// for an outside agent acting as it. The plaintext is returned once and
// never stored. A stopped agent gets no outside token: stopping revoked
// them (SetAgentState), and the check shares the insert's transaction, so
// a token minted while a workflow stops cannot outlive the stop.
func (db *DB) CreateToken(ctx context.Context, k AgentKey, runID string) (string, error) {
	token, err := newToken()
	if err != nil {
		return "", err
	}
	err = db.write(ctx, func(conn querier) error {
		return insertToken(conn, k, runID, token, db.nowMs())
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// newToken is a fresh bearer token's plaintext.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return tokenPrefix + hex.EncodeToString(b), nil
}

// insertToken records token for agent k (run runID, or "" for an outside
// agent) inside a caller's transaction; see CreateToken.
func insertToken(conn querier, k AgentKey, runID, token string, now int64) error {
	state := ""
	err := conn.execute(`SELECT state FROM agents WHERE workflow = ? AND tag = ? AND name = ?`,
		&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(s row) error {
			state = s.ColumnText(0)
			return nil
		}})
	switch {
	case err != nil:
		return err
	case state == "":
		return contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
	case contract.AgentState(state) == contract.AgentStopped && runID == "":
		return contract.Errorf(contract.CodeConflict, "agent %q is stopped, and a stopped agent gets no token: start it (or its workflow) again first", k)
	}
	return conn.execute(`INSERT INTO agent_tokens (token_sha256, agent, workflow, tag, run_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`,
		&execOptions{Args: []any{hashToken(token), k.Name, k.Workflow, k.Tag, runID, now}})
}

// LookupToken authenticates a bearer token. Unknown, revoked and malformed
// tokens, and those of deleted agents, are all just not found, so a caller
// learns nothing by probing.
//
// A token found once is remembered, so that the MCP hot path does not read
// the database on every request; every write that can end a token forgets
// them all before it returns (see genCache). In a cluster nothing is
// remembered: another member may end a token, and this one would not
// hear of it.
func (db *DB) LookupToken(ctx context.Context, token string) (Token, error) {
	hash := hashToken(token)
	tok, gen, ok := db.tokens.get(hash)
	if ok && !db.Cluster() {
		return tok, nil
	}
	found := false
	err := db.read(ctx, func(conn querier) error {
		// A run's token is refused once its run has ended, even if a
		// revocation was missed: the run's state is the truth.
		return conn.execute(`SELECT agent, workflow, tag, run_id, created_at FROM agent_tokens t
			WHERE token_sha256 = ? AND revoked_at = 0
			AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = t.run_id AND r.state <> 'running')`,
			&execOptions{Args: []any{hash}, ResultFunc: func(s row) error {
				tok = Token{Key: AgentKey{Name: s.ColumnText(0), Workflow: s.ColumnText(1), Tag: s.ColumnText(2)},
					RunID: s.ColumnText(3), CreatedAt: fromMs(s.ColumnInt64(4))}
				found = true
				return nil
			}})
	})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "agent token not found or revoked")
	}
	if err == nil && !db.Cluster() {
		db.tokens.put(hash, tok, gen)
	}
	return tok, err
}

// RevokeToken ends one token, as when its run is over. Revoking it again is
// not an error, so cleanup paths may overlap.
func (db *DB) RevokeToken(ctx context.Context, token string) error {
	defer db.tokens.forget()
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agent_tokens SET revoked_at = CASE revoked_at WHEN 0 THEN ? ELSE revoked_at END
			WHERE token_sha256 = ?`, &execOptions{Args: []any{db.nowMs(), hashToken(token)}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "agent token not found")
		}
		return err
	})
}

// RevokeRunTokens ends every live token of a run, so that a worker that
// outlives its run cannot keep acting; it returns how many it ended.
func (db *DB) RevokeRunTokens(ctx context.Context, runID string) (int, error) {
	if runID == "" {
		return 0, contract.Errorf(contract.CodeInvalid, "run id is required")
	}
	return db.revokeTokens(ctx, `run_id = ?2`, runID)
}

// revokeRunTokens ends the live tokens of run id inside a caller's
// transaction, which forgets cached tokens once it has committed.
func revokeRunTokens(conn querier, now int64, id string) error {
	return conn.execute(`UPDATE agent_tokens SET revoked_at = ? WHERE revoked_at = 0 AND run_id = ?`,
		&execOptions{Args: []any{now, id}})
}

// RevokeAgentTokens ends every live token of an agent, as when it is
// stopped; it returns how many it ended (0 for an agent that has none,
// including one that does not exist).
func (db *DB) RevokeAgentTokens(ctx context.Context, k AgentKey) (int, error) {
	return db.revokeTokens(ctx, `workflow = ?2 AND tag = ?3 AND agent = ?4`, k.Workflow, k.Tag, k.Name)
}

// forgetRunTokens drops run id's tokens from the cache once its end has
// committed; the other agents' stay cached (a run ends every few
// milliseconds on a busy team).
func (db *DB) forgetRunTokens(id string) {
	db.tokens.forgetIf(func(t Token) bool { return t.RunID == id })
}

// revokeTokens revokes the live tokens matching where, a constant condition
// on ?2 and later parameters.
func (db *DB) revokeTokens(ctx context.Context, where string, args ...any) (int, error) {
	defer db.tokens.forget()
	n := 0
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agent_tokens SET revoked_at = ?1 WHERE revoked_at = 0 AND `+where,
			&execOptions{Args: append([]any{db.nowMs()}, args...)})
		n = conn.changes()
		return err
	})
	return n, err
}
