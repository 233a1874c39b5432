package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Efforts (issue 43): a skill applied to a work directory by one agent,
// walked one phase at a time. The store keeps the walk's facts and applies
// the rules that need its data, each inside the write that depends on
// them: an agent has one active effort, a directory numbers its efforts
// once, a phase moves only from where it is and only with the current
// continue token's nonce (compare-and-swap, so a replayed token writes
// nothing). What a skill means (phase names, proof types, evidence rules)
// is the host's: it checks proof and evidence with workflow/skill and
// hands the store the snapshot, the phase names and what it decided.
//
// An effort belongs to its directory, not to its agent: removing the agent
// or its workflow keeps its efforts and their history, and an active one
// stays active without a running agent (the fleet view shows it so) until
// someone finishes or abandons it, or an agent of the same name resumes it.

// Limits of efforts, exported so that tool descriptions and the CLI can
// state them.
const (
	// MaxEffortNotes bounds the notes of one checkpoint and an abandon's
	// reason (characters): a debrief, not a document dump.
	MaxEffortNotes = 64_000
	// MaxEffortJSON bounds a proof or evidence list (bytes).
	MaxEffortJSON = 256 << 10
	// MaxEffortSkill bounds a skill's snapshot (bytes).
	MaxEffortSkill = 1 << 20
	// MaxObservedSubject bounds an observation's subject (bytes): a
	// command line, a path or a tool name; longer ones are cut.
	MaxObservedSubject = 8 << 10
)

const (
	effortIDPrefix  = "effort-"
	effortCounterID = "effort" // its row in counters
)

// CheckpointKind says what a checkpoint of an effort's history records.
type CheckpointKind string

// Checkpoint kinds.
const (
	CheckpointEntered   CheckpointKind = "entered"   // a phase began
	CheckpointCompleted CheckpointKind = "completed" // a phase ended with its proof, the effort went on
	CheckpointFinished  CheckpointKind = "finished"  // the last phase ended: the effort is done
	CheckpointAbandoned CheckpointKind = "abandoned" // the effort was given up
)

// ObservationKind says what the daemon saw a run do.
type ObservationKind string

// Observation kinds, the evidence kinds of workflow/skill.
const (
	ObservedShell ObservationKind = "shell" // a shell command ended
	ObservedFile  ObservationKind = "file"  // a file was written
	ObservedTool  ObservationKind = "tool"  // a tool was called
)

// ContextUse is what the host last learned of an agent's context window,
// for the fleet view.
type ContextUse struct {
	// Tokens is how much of it is used, Window its size; 0: unknown.
	Tokens, Window int64
}

// Effort is a skill applied to a directory by an agent.
type Effort struct {
	// ID is "effort-N", unique across directories, never reused.
	ID    string
	Agent AgentKey
	// Dir is the work directory: absolute and clean.
	Dir string
	// Ordinal numbers the directory's efforts 1, 2, 3, whatever their
	// workflow; artifacts are named by it (1_IMPLEMENT.md).
	Ordinal int
	Skill   string
	// Snapshot is the skill as it was at the start, as the host gave it.
	Snapshot json.RawMessage
	// Phases are the names of the skill's phases, in order.
	Phases []string
	Mode   string
	State  contract.EffortState
	// Phase is the index of the current phase (the last one once ended),
	// PhaseName its name.
	Phase     int
	PhaseName string
	// Nonce is the current continue token's; "" once ended.
	Nonce string
	// Reason is why it was abandoned.
	Reason string
	// EndedAt is zero while active. HeartbeatAt is its last sign of life.
	StartedAt, EndedAt, HeartbeatAt time.Time
	// Context is nil until the host reports one.
	Context *ContextUse
	// Dirs are the directories the effort touched; Directives the
	// directive files already brought in. Both in the order they came.
	Dirs, Directives []string
}

// LastPhase reports whether the effort is in its last phase.
func (e Effort) LastPhase() bool { return e.Phase == len(e.Phases)-1 }

// Checkpoint is one line of an effort's history.
type Checkpoint struct {
	// N counts the effort's checkpoints from 1.
	N         int
	Phase     int
	PhaseName string
	Kind      CheckpointKind
	// Proof (an object), Notes and Evidence (a list) are what the phase
	// ended with; empty for an entered checkpoint.
	Proof    json.RawMessage
	Notes    string
	Evidence json.RawMessage
	// Dirs are the effort's directories at that moment.
	Dirs []string
	Run  string
	At   time.Time
}

// Observation is something the daemon saw a run do in a phase.
type Observation struct {
	Phase int
	// N counts the phase's observations from 1.
	N    int
	Kind ObservationKind
	// Subject is the command line, the file's path or the tool's name.
	Subject string
	// Exit is a shell command's exit status; nil for the other kinds.
	Exit *int
	Run  string
	At   time.Time
}

// NewEffort is an effort to start.
type NewEffort struct {
	Agent AgentKey
	// Dir must be absolute; it is cleaned.
	Dir   string
	Skill string
	// Snapshot is the skill as JSON, Phases its phase names (at least one).
	Snapshot json.RawMessage
	Phases   []string
	Mode     string
	// Nonce is the first continue token's.
	Nonce string
	Run   string
}

// Debrief is what a finished effort of a directory left for the next
// one: its last checkpoint's notes.
type Debrief struct {
	ID      string
	Ordinal int
	Skill   string
	Notes   string
	EndedAt time.Time
}

// Advance moves an effort from phase From to the next one.
type Advance struct {
	ID   string
	From int
	// Nonce must be the current one; NewNonce replaces it.
	Nonce, NewNonce string
	// Proof, Notes and Evidence are what phase From ended with; Dirs are
	// directories discovered meanwhile, added to the effort's.
	Proof    json.RawMessage
	Notes    string
	Evidence json.RawMessage
	Dirs     []string
	Run      string
}

// Finish ends an effort: finished (the host has checked the last phase's
// proof and evidence) or, with Abandon, abandoned for Reason.
type Finish struct {
	ID string
	// Nonce, when set, must be the current one; "" (the user, the CLI)
	// skips the check.
	Nonce    string
	Abandon  bool
	Reason   string
	Proof    json.RawMessage
	Notes    string
	Evidence json.RawMessage
	Run      string
}

// EffortFilter narrows Efforts; zero fields match everything.
type EffortFilter struct {
	Dir                  string
	Workflow, Tag, Agent string
	// All includes ended efforts; otherwise only active ones are listed.
	All bool
}

// EffortResume is what a run that picks an effort up again needs: where
// it is, the notes so far and the directories it knew.
type EffortResume struct {
	Effort Effort
	// Last is the newest checkpoint (the current phase's entered one
	// while active).
	Last Checkpoint
	// Notes are the checkpoints with notes, oldest first.
	Notes []Checkpoint
}

// EffortID reads an id as agents and users write it: "effort-3", or "3".
func EffortID(s string) string {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseUint(s, 10, 63); err == nil {
		return effortIDPrefix + s
	}
	return s
}

// StartEffort starts ne for its agent, which must exist and have no
// active effort, with the directory's next ordinal and the entered
// checkpoint of phase 0. It returns the effort and the directory's
// finished efforts (oldest first), whose debriefs the host hands over.
func (db *DB) StartEffort(ctx context.Context, ne NewEffort) (Effort, []Debrief, error) {
	ne, err := checkNewEffort(ne)
	if err != nil {
		return Effort{}, nil, err
	}
	var (
		e    Effort
		prev []Debrief
	)
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		if _, err := getAgent(conn, ne.Agent); err != nil {
			return err
		}
		if cur, ok, err := activeEffort(conn, ne.Agent); err != nil {
			return err
		} else if ok {
			return contract.Errorf(contract.CodeConflict, "%s already has an active effort, %s (%s, #%d of %s, phase %s): finish or abandon it first",
				ne.Agent, cur.ID, cur.Skill, cur.Ordinal, cur.Dir, cur.PhaseName)
		}
		n, err := count(conn, `INSERT INTO counters (name, value) VALUES ('`+effortCounterID+`', 1)
			ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`)
		if err != nil {
			return err
		}
		// The upsert's row (its lock, on PostgreSQL) orders two starts on
		// one directory: each reads the other's number.
		ordinal, err := count(conn, `INSERT INTO work_dirs (dir, last_ordinal, created_at) VALUES (?, 1, ?)
			ON CONFLICT (dir) DO UPDATE SET last_ordinal = work_dirs.last_ordinal + 1 RETURNING last_ordinal`, ne.Dir, now)
		if err != nil {
			return err
		}
		id := effortIDPrefix + strconv.Itoa(n)
		err = conn.execute(`INSERT INTO efforts (id, n, workflow, tag, agent, dir, ordinal, skill, skill_json, phases_json,
			mode, phase, phase_name, nonce, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
			&execOptions{Args: []any{id, n, ne.Agent.Workflow, ne.Agent.Tag, ne.Agent.Name, ne.Dir, ordinal, ne.Skill,
				string(ne.Snapshot), jsonText(ne.Phases), ne.Mode, ne.Phases[0], ne.Nonce, now, now}})
		if err != nil {
			return err
		}
		if e, err = getEffort(conn, id); err != nil {
			return err
		}
		if err := addCheckpoint(conn, e, CheckpointEntered, checkpointData{Run: ne.Run}, now); err != nil {
			return err
		}
		prev, err = debriefs(conn, ne.Dir, id)
		return err
	})
	if err != nil {
		return Effort{}, nil, err
	}
	return e, prev, nil
}

// AdvanceEffort ends phase a.From with its proof, notes and evidence and
// enters the next phase, in one compare-and-swap: the effort must be
// active, in phase a.From, and a.Nonce its current nonce, or nothing is
// written (a replayed or stale token is a conflict). It returns the
// effort as it now is.
func (db *DB) AdvanceEffort(ctx context.Context, a Advance) (Effort, error) {
	a.ID = EffortID(a.ID)
	dirs, err := cleanDirs(a.Dirs)
	if err != nil {
		return Effort{}, err
	}
	if a.Nonce == "" || a.NewNonce == "" {
		return Effort{}, contract.Errorf(contract.CodeInvalid, "advance %s: needs the continue token's nonce and the next one's", a.ID)
	}
	if err := checkCheckpointData(a.Proof, a.Notes, a.Evidence); err != nil {
		return Effort{}, err
	}
	var e Effort
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		cur, err := getEffort(conn, a.ID)
		if err != nil {
			return err
		}
		if err := checkTurn(cur, a.From, a.Nonce, "advance"); err != nil {
			return err
		}
		if cur.LastPhase() {
			return contract.Errorf(contract.CodeConflict, "%s is in its last phase, %s: finish the effort instead", cur.ID, cur.PhaseName)
		}
		cur.Dirs = mergeNew(cur.Dirs, dirs)
		err = conn.execute(`UPDATE efforts SET phase = ?, phase_name = ?, nonce = ?, dirs_json = ?, heartbeat_at = ?
			WHERE id = ? AND state = 'active' AND phase = ? AND nonce = ?`,
			&execOptions{Args: []any{cur.Phase + 1, cur.Phases[cur.Phase+1], a.NewNonce, jsonText(cur.Dirs), now,
				cur.ID, cur.Phase, cur.Nonce}})
		if err != nil {
			return err
		}
		if conn.changes() != 1 {
			return contract.Errorf(contract.CodeInternal, "effort %s changed while it was advanced", cur.ID)
		}
		done := checkpointData{Proof: a.Proof, Notes: a.Notes, Evidence: a.Evidence, Run: a.Run}
		if err := addCheckpoint(conn, cur, CheckpointCompleted, done, now); err != nil {
			return err
		}
		if e, err = getEffort(conn, cur.ID); err != nil {
			return err
		}
		return addCheckpoint(conn, e, CheckpointEntered, checkpointData{Run: a.Run}, now)
	})
	if err != nil {
		return Effort{}, err
	}
	return e, nil
}

// FinishEffort ends an active effort: finished, which needs it in its
// last phase (the host has checked that phase's proof and evidence), or
// abandoned, which needs a reason. Its nonce is cleared, so no token of
// it is accepted again.
func (db *DB) FinishEffort(ctx context.Context, f Finish) (Effort, error) {
	f.ID = EffortID(f.ID)
	f.Reason = strings.TrimSpace(f.Reason)
	if f.Abandon && f.Reason == "" {
		return Effort{}, contract.Errorf(contract.CodeInvalid, "abandon %s: say why (a reason)", f.ID)
	}
	if err := checkEffortText("reason", f.Reason, MaxEffortNotes); err != nil {
		return Effort{}, err
	}
	if err := checkCheckpointData(f.Proof, f.Notes, f.Evidence); err != nil {
		return Effort{}, err
	}
	var e Effort
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		cur, err := getEffort(conn, f.ID)
		if err != nil {
			return err
		}
		verb, state, kind := "finish", contract.EffortFinished, CheckpointFinished
		if f.Abandon {
			verb, state, kind = "abandon", contract.EffortAbandoned, CheckpointAbandoned
		}
		if err := checkTurn(cur, cur.Phase, f.Nonce, verb); err != nil {
			return err
		}
		if !f.Abandon && !cur.LastPhase() {
			return contract.Errorf(contract.CodeConflict, "%s is in phase %d of %d, %s: finishing needs the last phase, %s",
				cur.ID, cur.Phase+1, len(cur.Phases), cur.PhaseName, cur.Phases[len(cur.Phases)-1])
		}
		err = conn.execute(`UPDATE efforts SET state = ?, nonce = '', reason = ?, ended_at = ?, heartbeat_at = ?
			WHERE id = ? AND state = 'active'`,
			&execOptions{Args: []any{string(state), f.Reason, now, now, cur.ID}})
		if err != nil {
			return err
		}
		err = addCheckpoint(conn, cur, kind, checkpointData{Proof: f.Proof, Notes: f.Notes, Evidence: f.Evidence, Run: f.Run}, now)
		if err != nil {
			return err
		}
		e, err = getEffort(conn, cur.ID)
		return err
	})
	if err != nil {
		return Effort{}, err
	}
	return e, nil
}

// checkTurn is the compare of the compare-and-swap: the effort is active,
// in phase from, and nonce (when given) is its current one.
func checkTurn(e Effort, from int, nonce, verb string) error {
	switch {
	case e.State != contract.EffortActive:
		return contract.Errorf(contract.CodeConflict, "cannot %s %s: it is %s", verb, e.ID, e.State)
	case e.Phase != from:
		return contract.Errorf(contract.CodeConflict, "cannot %s %s from phase %d: it is in phase %d, %s (the token is stale)",
			verb, e.ID, from+1, e.Phase+1, e.PhaseName)
	case nonce != "" && nonce != e.Nonce:
		return contract.Errorf(contract.CodeConflict, "cannot %s %s: the continue token was already used or is not its latest", verb, e.ID)
	}
	return nil
}

// Observe records what the daemon saw a run do in phase of effort id,
// which must be active and in that phase (an observation never counts
// for another phase). A subject longer than MaxObservedSubject is cut.
func (db *DB) Observe(ctx context.Context, id string, phase int, kind ObservationKind, subject string, exit *int, run string) (Observation, error) {
	id = EffortID(id)
	switch kind {
	case ObservedShell:
	case ObservedFile, ObservedTool:
		if exit != nil {
			return Observation{}, contract.Errorf(contract.CodeInvalid, "observe %s: only a shell observation has an exit status", id)
		}
	default:
		return Observation{}, contract.Errorf(contract.CodeInvalid, "observe %s: unknown kind %q: use shell, file or tool", id, kind)
	}
	if subject == "" {
		return Observation{}, contract.Errorf(contract.CodeInvalid, "observe %s: the %s observation has no subject", id, kind)
	}
	subject = cutUTF8(strings.ToValidUTF8(strings.ReplaceAll(subject, "\x00", ""), "\uFFFD"), MaxObservedSubject)
	var o Observation
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		cur, err := getEffort(conn, id)
		if err != nil {
			return err
		}
		if cur.State != contract.EffortActive {
			return contract.Errorf(contract.CodeConflict, "observe %s: it is %s", id, cur.State)
		}
		if cur.Phase != phase {
			return contract.Errorf(contract.CodeConflict, "observe %s in phase %d: it is in phase %d, %s", id, phase+1, cur.Phase+1, cur.PhaseName)
		}
		n, err := count(conn, `SELECT COALESCE(MAX(n), 0) + 1 FROM effort_observations WHERE effort_id = ? AND phase = ?`, id, phase)
		if err != nil {
			return err
		}
		var code any
		if exit != nil {
			code = *exit
		}
		err = conn.execute(`INSERT INTO effort_observations (effort_id, phase, n, kind, subject, exit_code, run_id, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, &execOptions{Args: []any{id, phase, n, string(kind), subject, code, run, now}})
		if err != nil {
			return err
		}
		o = Observation{Phase: phase, N: n, Kind: kind, Subject: subject, Exit: exit, Run: run, At: fromMs(now)}
		return nil
	})
	if err != nil {
		return Observation{}, err
	}
	return o, nil
}

// Observations lists what was observed in phase of effort id, in order:
// the evidence of that phase, never of another.
func (db *DB) Observations(ctx context.Context, id string, phase int) ([]Observation, error) {
	id = EffortID(id)
	var out []Observation
	err := db.snapshot(ctx, func(conn querier) error {
		if _, err := getEffort(conn, id); err != nil {
			return err
		}
		return conn.execute(`SELECT phase, n, kind, subject, exit_code, run_id, at FROM effort_observations
			WHERE effort_id = ? AND phase = ? ORDER BY n`,
			&execOptions{Args: []any{id, phase}, ResultFunc: func(r row) error {
				o := Observation{Phase: r.ColumnInt(0), N: r.ColumnInt(1), Kind: ObservationKind(r.ColumnText(2)),
					Subject: r.ColumnText(3), Run: r.ColumnText(5), At: fromMs(r.ColumnInt64(6))}
				if r.ColumnType(4) != sqlite.TypeNull {
					x := r.ColumnInt(4)
					o.Exit = &x
				}
				out = append(out, o)
				return nil
			}})
	})
	return out, err
}

// HeartbeatEffort records a sign of life of an active effort at at (zero:
// now) and, when use is not nil, its agent's context use. The host calls
// it at most every few seconds: each call is a write.
func (db *DB) HeartbeatEffort(ctx context.Context, id string, at time.Time, use *ContextUse) error {
	id = EffortID(id)
	return db.write(ctx, func(conn querier) error {
		ms := db.nowMs()
		if !at.IsZero() {
			ms = at.UnixMilli()
		}
		cur, err := getEffort(conn, id)
		if err != nil {
			return err
		}
		if cur.State != contract.EffortActive {
			return contract.Errorf(contract.CodeConflict, "heartbeat of %s: it is %s", id, cur.State)
		}
		ms = max(ms, cur.HeartbeatAt.UnixMilli()) // a late report never moves it back
		if use == nil {
			return conn.execute(`UPDATE efforts SET heartbeat_at = ? WHERE id = ?`, &execOptions{Args: []any{ms, id}})
		}
		return conn.execute(`UPDATE efforts SET heartbeat_at = ?, context_tokens = ?, context_window = ? WHERE id = ?`,
			&execOptions{Args: []any{ms, use.Tokens, use.Window, id}})
	})
}

// AddEffortDirs adds directories an active effort touched and returns
// those it did not know yet, in the order given.
func (db *DB) AddEffortDirs(ctx context.Context, id string, dirs ...string) ([]string, error) {
	dirs, err := cleanDirs(dirs)
	if err != nil {
		return nil, err
	}
	return db.addEffortList(ctx, EffortID(id), "dirs_json", dirs)
}

// AddEffortDirectives records directive files brought into an active
// effort's context and returns those not brought in before, so that each
// is brought in once.
func (db *DB) AddEffortDirectives(ctx context.Context, id string, paths ...string) ([]string, error) {
	paths, err := cleanDirs(paths)
	if err != nil {
		return nil, err
	}
	return db.addEffortList(ctx, EffortID(id), "directives_json", paths)
}

// addEffortList appends the new items to one of an effort's JSON lists.
func (db *DB) addEffortList(ctx context.Context, id, column string, items []string) ([]string, error) {
	var fresh []string
	err := db.write(ctx, func(conn querier) error {
		fresh = nil // the write may run again
		cur, err := getEffort(conn, id)
		if err != nil {
			return err
		}
		if cur.State != contract.EffortActive {
			return contract.Errorf(contract.CodeConflict, "%s is %s: it takes no more directories or directives", id, cur.State)
		}
		have := cur.Dirs
		if column == "directives_json" {
			have = cur.Directives
		}
		all := mergeNew(have, items)
		fresh = all[len(have):]
		if len(fresh) == 0 {
			return nil
		}
		return conn.execute(`UPDATE efforts SET `+column+` = ? WHERE id = ?`, &execOptions{Args: []any{jsonText(all), id}})
	})
	if err != nil {
		return nil, err
	}
	return fresh, nil
}

// GetEffort returns effort id.
func (db *DB) GetEffort(ctx context.Context, id string) (Effort, error) {
	var e Effort
	err := db.read(ctx, func(conn querier) (err error) {
		e, err = getEffort(conn, EffortID(id))
		return err
	})
	return e, err
}

// ActiveEffort returns k's active effort; found is false when it has none.
func (db *DB) ActiveEffort(ctx context.Context, k AgentKey) (e Effort, found bool, err error) {
	err = db.read(ctx, func(conn querier) error {
		e, found, err = activeEffort(conn, k)
		return err
	})
	return e, found, err
}

// Efforts lists the efforts f matches, in the order they started.
func (db *DB) Efforts(ctx context.Context, f EffortFilter) ([]Effort, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Dir != "" {
		add("dir = ?", filepath.Clean(f.Dir))
	}
	if f.Workflow != "" {
		add("workflow = ?", f.Workflow)
	}
	if f.Tag != "" {
		add("tag = ?", f.Tag)
	}
	if f.Agent != "" {
		add("agent = ?", f.Agent)
	}
	if !f.All {
		where = append(where, "state = 'active'")
	}
	q := `SELECT ` + effortColumns + ` FROM efforts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	var out []Effort
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(q+` ORDER BY n`, &execOptions{Args: args, ResultFunc: func(r row) error {
			e, err := scanEffort(r)
			out = append(out, e)
			return err
		}})
	})
	return out, err
}

// EffortHistory returns effort id's checkpoints, oldest first.
func (db *DB) EffortHistory(ctx context.Context, id string) ([]Checkpoint, error) {
	id = EffortID(id)
	var out []Checkpoint
	err := db.snapshot(ctx, func(conn querier) error {
		if _, err := getEffort(conn, id); err != nil {
			return err
		}
		var err error
		out, err = checkpoints(conn, id)
		return err
	})
	return out, err
}

// ResumeEffort returns what a run picking effort id up again needs: the
// effort, its last checkpoint and the notes so far.
func (db *DB) ResumeEffort(ctx context.Context, id string) (EffortResume, error) {
	id = EffortID(id)
	var r EffortResume
	err := db.snapshot(ctx, func(conn querier) error {
		var err error
		if r.Effort, err = getEffort(conn, id); err != nil {
			return err
		}
		cps, err := checkpoints(conn, id)
		if err != nil {
			return err
		}
		if len(cps) == 0 {
			return contract.Errorf(contract.CodeInternal, "effort %s in the database has no checkpoint", id)
		}
		r.Last = cps[len(cps)-1]
		for _, c := range cps {
			if c.Notes != "" {
				r.Notes = append(r.Notes, c)
			}
		}
		return nil
	})
	return r, err
}

// checkNewEffort cleans ne and applies every rule that needs no database.
func checkNewEffort(ne NewEffort) (NewEffort, error) {
	ne.Skill = strings.TrimSpace(ne.Skill)
	switch {
	case ne.Agent.Name == "" || ne.Agent.Workflow == "" || ne.Agent.Tag == "":
		return ne, contract.Errorf(contract.CodeInvalid, "an effort needs its agent (name, workflow and tag)")
	case ne.Skill == "":
		return ne, contract.Errorf(contract.CodeInvalid, "an effort needs a skill")
	case len(ne.Phases) == 0:
		return ne, contract.Errorf(contract.CodeInvalid, "skill %s has no phase to walk", ne.Skill)
	case ne.Nonce == "":
		return ne, contract.Errorf(contract.CodeInvalid, "an effort's first continue token needs a nonce")
	case len(ne.Snapshot) > MaxEffortSkill:
		return ne, contract.Errorf(contract.CodeTooLarge, "skill %s is %d bytes as JSON; the limit is %d", ne.Skill, len(ne.Snapshot), MaxEffortSkill)
	case !json.Valid(ne.Snapshot):
		return ne, contract.Errorf(contract.CodeInvalid, "the snapshot of skill %s is not JSON", ne.Skill)
	}
	for i, p := range ne.Phases {
		if strings.TrimSpace(p) == "" {
			return ne, contract.Errorf(contract.CodeInvalid, "skill %s: phase %d has no name", ne.Skill, i+1)
		}
	}
	dirs, err := cleanDirs([]string{ne.Dir})
	if err != nil {
		return ne, err
	}
	ne.Dir = dirs[0]
	return ne, nil
}

// checkCheckpointData checks what a phase ends with: proof an object,
// evidence a list (both optional), notes text within bounds.
func checkCheckpointData(proof json.RawMessage, notes string, evidence json.RawMessage) error {
	if err := checkEffortText("notes", notes, MaxEffortNotes); err != nil {
		return err
	}
	for what, v := range map[string]struct {
		raw   json.RawMessage
		shape byte
	}{"proof": {proof, '{'}, "evidence": {evidence, '['}} {
		if len(v.raw) == 0 {
			continue
		}
		if len(v.raw) > MaxEffortJSON {
			return contract.Errorf(contract.CodeTooLarge, "%s is %d bytes; the limit is %d", what, len(v.raw), MaxEffortJSON)
		}
		if t := strings.TrimSpace(string(v.raw)); !json.Valid(v.raw) || t == "" || t[0] != v.shape {
			return contract.Errorf(contract.CodeInvalid, "%s is not a JSON %s", what, map[byte]string{'{': "object", '[': "list"}[v.shape])
		}
	}
	return nil
}

// checkEffortText refuses text over max characters or with a NUL byte.
func checkEffortText(what, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return contract.Errorf(contract.CodeTooLarge, "%s is %d characters; the limit is %d: write the rest to the effort's log", what, n, max)
	}
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return contract.Errorf(contract.CodeInvalid, "%s is not text (a NUL byte or invalid UTF-8)", what)
	}
	return nil
}

// cleanDirs checks that every path is absolute and returns them cleaned,
// without repeats.
func cleanDirs(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
			return nil, contract.Errorf(contract.CodeInvalid, "%q is not an absolute path", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return dedupe(out), nil
}

// mergeNew appends the items of add that have does not hold.
func mergeNew(have, add []string) []string {
	out := append([]string(nil), have...)
	for _, s := range add {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// jsonText encodes a list for a JSON column; never nil, so never "null".
func jsonText(list []string) string {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list) // a []string always encodes
	return string(b)
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

type checkpointData struct {
	Proof    json.RawMessage
	Notes    string
	Evidence json.RawMessage
	Run      string
}

// addCheckpoint appends a checkpoint of e's current phase and directories.
func addCheckpoint(conn querier, e Effort, kind CheckpointKind, d checkpointData, now int64) error {
	proof, evidence := string(d.Proof), string(d.Evidence)
	if proof == "" {
		proof = "{}"
	}
	if evidence == "" {
		evidence = "[]"
	}
	return conn.execute(`INSERT INTO effort_checkpoints (effort_id, n, phase, phase_name, kind, proof_json, notes,
		evidence_json, dirs_json, run_id, at)
		SELECT ?1, COALESCE(MAX(n), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM effort_checkpoints WHERE effort_id = ?1`,
		&execOptions{Args: []any{e.ID, e.Phase, e.PhaseName, string(kind), proof, d.Notes, evidence, jsonText(e.Dirs), d.Run, now}})
}

const effortColumns = `id, workflow, tag, agent, dir, ordinal, skill, skill_json, phases_json, mode, state, phase,
	phase_name, nonce, reason, started_at, ended_at, heartbeat_at, context_tokens, context_window, dirs_json, directives_json`

func scanEffort(r row) (Effort, error) {
	e := Effort{
		ID:    r.ColumnText(0),
		Agent: AgentKey{Workflow: r.ColumnText(1), Tag: r.ColumnText(2), Name: r.ColumnText(3)},
		Dir:   r.ColumnText(4), Ordinal: r.ColumnInt(5), Skill: r.ColumnText(6),
		Snapshot: json.RawMessage(r.ColumnText(7)), Mode: r.ColumnText(9),
		Phase: r.ColumnInt(11), PhaseName: r.ColumnText(12), Nonce: r.ColumnText(13), Reason: r.ColumnText(14),
		StartedAt: fromMs(r.ColumnInt64(15)), HeartbeatAt: fromMs(r.ColumnInt64(17)),
	}
	if ms := r.ColumnInt64(16); ms != 0 {
		e.EndedAt = fromMs(ms)
	}
	if r.ColumnType(18) != sqlite.TypeNull || r.ColumnType(19) != sqlite.TypeNull {
		e.Context = &ContextUse{Tokens: r.ColumnInt64(18), Window: r.ColumnInt64(19)}
	}
	bad := func(err error) (Effort, error) {
		return e, contract.Errorf(contract.CodeInternal, "effort %s in the database: %w", e.ID, err)
	}
	state, err := contract.ParseEffortState(r.ColumnText(10))
	if err != nil {
		return bad(err)
	}
	e.State = state
	if !json.Valid(e.Snapshot) {
		return bad(fmt.Errorf("its skill snapshot is not JSON"))
	}
	for col, dst := range map[int]*[]string{8: &e.Phases, 20: &e.Dirs, 21: &e.Directives} {
		if err := json.Unmarshal([]byte(r.ColumnText(col)), dst); err != nil {
			return bad(fmt.Errorf("column %d is not a list of strings: %w", col, err))
		}
	}
	if len(e.Phases) == 0 || e.Phase >= len(e.Phases) {
		return bad(fmt.Errorf("phase %d of a skill of %d phases", e.Phase, len(e.Phases)))
	}
	return e, nil
}

func getEffort(conn querier, id string) (e Effort, err error) {
	found := false
	err = conn.execute(`SELECT `+effortColumns+` FROM efforts WHERE id = ?`,
		&execOptions{Args: []any{id}, ResultFunc: func(r row) error {
			found = true
			e, err = scanEffort(r)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "no effort %s", id)
	}
	return e, err
}

// EffortPhase is what a gate decision reads of an agent's active effort
// on every tool call: where it is, without its snapshot or its lists.
type EffortPhase struct {
	ID        string
	Ordinal   int
	Phase     int
	PhaseName string
}

// ActiveEffortPhase is k's active effort's phase; found is false when k
// has none. It is ActiveEffort's cheap form, for the gate's every call.
func (db *DB) ActiveEffortPhase(ctx context.Context, k AgentKey) (p EffortPhase, found bool, err error) {
	err = db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT id, ordinal, phase, phase_name FROM efforts WHERE workflow = ? AND tag = ? AND agent = ? AND state = 'active'`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(r row) error {
				found = true
				p = EffortPhase{ID: r.ColumnText(0), Ordinal: r.ColumnInt(1), Phase: r.ColumnInt(2), PhaseName: r.ColumnText(3)}
				return nil
			}})
	})
	return p, found, err
}

func activeEffort(conn querier, k AgentKey) (e Effort, found bool, err error) {
	err = conn.execute(`SELECT `+effortColumns+` FROM efforts WHERE workflow = ? AND tag = ? AND agent = ? AND state = 'active'`,
		&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(r row) error {
			found = true
			e, err = scanEffort(r)
			return err
		}})
	return e, found, err
}

// checkpoints reads effort id's history, oldest first.
func checkpoints(conn querier, id string) ([]Checkpoint, error) {
	var out []Checkpoint
	err := conn.execute(`SELECT n, phase, phase_name, kind, proof_json, notes, evidence_json, dirs_json, run_id, at
		FROM effort_checkpoints WHERE effort_id = ? ORDER BY n`,
		&execOptions{Args: []any{id}, ResultFunc: func(r row) error {
			c := Checkpoint{N: r.ColumnInt(0), Phase: r.ColumnInt(1), PhaseName: r.ColumnText(2), Kind: CheckpointKind(r.ColumnText(3)),
				Proof: json.RawMessage(r.ColumnText(4)), Notes: r.ColumnText(5), Evidence: json.RawMessage(r.ColumnText(6)),
				Run: r.ColumnText(8), At: fromMs(r.ColumnInt64(9))}
			if !json.Valid(c.Proof) || !json.Valid(c.Evidence) {
				return contract.Errorf(contract.CodeInternal, "checkpoint %d of effort %s in the database: its proof or evidence is not JSON", c.N, id)
			}
			if err := json.Unmarshal([]byte(r.ColumnText(7)), &c.Dirs); err != nil {
				return contract.Errorf(contract.CodeInternal, "checkpoint %d of effort %s in the database: dirs: %w", c.N, id, err)
			}
			out = append(out, c)
			return nil
		}})
	return out, err
}

// debriefs are the finished efforts of dir other than except, oldest
// first, each with its last checkpoint's notes.
func debriefs(conn querier, dir, except string) ([]Debrief, error) {
	var out []Debrief
	err := conn.execute(`SELECT e.id, e.ordinal, e.skill, e.ended_at, COALESCE((SELECT c.notes FROM effort_checkpoints c
			WHERE c.effort_id = e.id ORDER BY c.n DESC LIMIT 1), '')
		FROM efforts e WHERE e.dir = ? AND e.state = 'finished' AND e.id <> ? ORDER BY e.ordinal`,
		&execOptions{Args: []any{dir, except}, ResultFunc: func(r row) error {
			out = append(out, Debrief{ID: r.ColumnText(0), Ordinal: r.ColumnInt(1), Skill: r.ColumnText(2),
				EndedAt: fromMs(r.ColumnInt64(3)), Notes: r.ColumnText(4)})
			return nil
		}})
	return out, err
}
