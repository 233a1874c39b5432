package store

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Cluster reports whether this store may be shared by several daemons
// (PostgreSQL): the daemon then registers itself, dispatches runs through
// the job queue and recovers the work of members that died.
func (db *DB) Cluster() bool { return db.eng != nil && db.dialectOf() == dialectPostgres }

func (db *DB) dialectOf() dialect {
	if _, ok := db.eng.(*postgresEngine); ok {
		return dialectPostgres
	}
	return dialectSQLite
}

// HearConfigChanges tells the store whether, from now on, this cluster
// member hears every change to agents and workflows that commits, made
// by any member (host/cluster's relay listens to the notifications the
// PostgreSQL triggers of migration 0009 send, and calls
// ConfigChangedElsewhere for each). Only while it does may the store keep
// teams and let callers keep agents' definitions (ConfigGeneration), as a
// single daemon always may. Either way what was kept is forgotten: a
// change may have gone unheard before.
func (db *DB) HearConfigChanges(on bool) {
	if on {
		db.configChanged()
		db.configHeard.Store(true)
		return
	}
	db.configHeard.Store(false)
	db.configChanged()
}

// ConfigChangedElsewhere forgets the teams and moves ConfigGeneration
// after a change to agents or workflows another member committed.
func (db *DB) ConfigChangedElsewhere() { db.configChanged() }

// configKept reports whether what was read of agents and workflows may be
// kept: always on the embedded file, in a cluster while this member hears
// the others' changes.
func (db *DB) configKept() bool { return !db.Cluster() || db.configHeard.Load() }

// clusterDaemon is the daemon id that scopes "this daemon's own" rows in a
// cluster, and "" (everything) on the embedded file.
func (db *DB) clusterDaemon() string {
	if db.Cluster() {
		return db.daemon
	}
	return ""
}

// Daemon is a member of the cluster as it registered itself.
type Daemon struct {
	ID, Host string
	PID      int
	// Address is where its HTTP API (and MCP server, and console) listen.
	Address     string
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	// StoppedAt is set when it stopped cleanly, or when another member
	// found it dead and took its work back.
	StoppedAt time.Time
}

// RegisterDaemon records d (its id, host, pid, address, version, start)
// as a live member. A member that joins again with the same id (a
// restarted daemon keeps it) is what it is now: its new pid, address and
// start, not those of its previous process.
func (db *DB) RegisterDaemon(ctx context.Context, d Daemon) error {
	return db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		return conn.execute(`INSERT INTO daemons (id, host, pid, address, version, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
			address = excluded.address, version = excluded.version, started_at = excluded.started_at,
			heartbeat_at = excluded.heartbeat_at, stopped_at = 0`,
			&execOptions{Args: []any{d.ID, d.Host, d.PID, d.Address, d.Version, now, now}})
	})
}

// DaemonHeartbeat keeps a member alive. A member that was already found
// dead (its work taken back) is told so: it must not go on as if it still
// held that work.
func (db *DB) DaemonHeartbeat(ctx context.Context, id string) error {
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE daemons SET heartbeat_at = ? WHERE id = ? AND stopped_at = 0`,
			&execOptions{Args: []any{db.nowMs(), id}})
		if err == nil && conn.changes() == 0 {
			return contract.Errorf(contract.CodeConflict, "daemon %s is no longer a member: the others found it dead and took its runs back", id)
		}
		return err
	})
}

// DaemonStopped marks a member as gone, when it stops cleanly.
func (db *DB) DaemonStopped(ctx context.Context, id string) error {
	return db.write(ctx, func(conn querier) error {
		return conn.execute(`UPDATE daemons SET stopped_at = ? WHERE id = ? AND stopped_at = 0`,
			&execOptions{Args: []any{db.nowMs(), id}})
	})
}

// ListDaemons returns the members, live ones first, newest first; those
// stopped for longer than keep are left out.
func (db *DB) ListDaemons(ctx context.Context, keep time.Duration) ([]Daemon, error) {
	var out []Daemon
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT id, host, pid, address, version, started_at, heartbeat_at, stopped_at FROM daemons
			WHERE stopped_at = 0 OR stopped_at >= ? ORDER BY stopped_at <> 0, started_at DESC, id`,
			&execOptions{Args: []any{db.nowMs() - keep.Milliseconds()}, ResultFunc: func(s row) error {
				d := Daemon{ID: s.ColumnText(0), Host: s.ColumnText(1), PID: s.ColumnInt(2), Address: s.ColumnText(3),
					Version: s.ColumnText(4), StartedAt: fromMs(s.ColumnInt64(5)), HeartbeatAt: fromMs(s.ColumnInt64(6))}
				if ms := s.ColumnInt64(7); ms > 0 {
					d.StoppedAt = fromMs(ms)
				}
				out = append(out, d)
				return nil
			}})
	})
	return out, err
}

// SharedSetting returns the cluster-wide value of key, storing candidate
// first if there is none yet: the first daemon's value wins, and every
// member gets the same (the API token, so a client may talk to any).
func (db *DB) SharedSetting(ctx context.Context, key, candidate string) (string, error) {
	var v string
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`INSERT INTO cluster_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
			&execOptions{Args: []any{key, candidate}})
		if err != nil {
			return err
		}
		return conn.execute(`SELECT value FROM cluster_settings WHERE key = ?`,
			&execOptions{Args: []any{key}, ResultFunc: func(s row) error { v = s.ColumnText(0); return nil }})
	})
	return v, err
}

// Recovered is what RecoverDeadDaemons took back from one dead member.
type Recovered struct {
	Daemon Daemon
	// Runs are the runs it had in flight, now failed.
	Runs []Run
	// Agents went from running back to idle, to be woken.
	Agents []AgentKey
	// Workers are its plugin processes as recorded (now forgotten): a
	// member on the same host kills those still alive.
	Workers []Worker
}

// RecoverDeadDaemons takes back, in one transaction, the work of every
// member whose heartbeat is older than lease: its runs in flight fail
// (their tasks' leases then go back with the next sweep), its running
// agents go back to idle, its plugin processes are forgotten, and it is
// marked stopped, so a member that was only stalled learns at its next
// heartbeat that its work is gone.
func (db *DB) RecoverDeadDaemons(ctx context.Context, lease time.Duration) ([]Recovered, error) {
	var out []Recovered
	err := db.write(ctx, func(conn querier) error {
		out = out[:0]
		now := db.nowMs()
		err := conn.execute(`SELECT id, host, pid, address, version, started_at, heartbeat_at FROM daemons
			WHERE stopped_at = 0 AND heartbeat_at < ? ORDER BY id`,
			&execOptions{Args: []any{now - lease.Milliseconds()}, ResultFunc: func(s row) error {
				out = append(out, Recovered{Daemon: Daemon{ID: s.ColumnText(0), Host: s.ColumnText(1), PID: s.ColumnInt(2),
					Address: s.ColumnText(3), Version: s.ColumnText(4), StartedAt: fromMs(s.ColumnInt64(5)),
					HeartbeatAt: fromMs(s.ColumnInt64(6))}})
				return nil
			}})
		if err != nil {
			return err
		}
		for i := range out {
			reason := "daemon " + out[i].Daemon.ID + " on " + out[i].Daemon.Host + " stopped responding during this run"
			if err := takeBack(conn, &out[i], reason, now); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// RecoverMember takes back what this member's previous process left when
// it died (a member keeps its id across restarts): the same as
// RecoverDeadDaemons does for another member, at start-up, before the
// member joins again.
func (db *DB) RecoverMember(ctx context.Context, id string) (Recovered, error) {
	var r Recovered
	err := db.write(ctx, func(conn querier) error {
		r = Recovered{Daemon: Daemon{ID: id}}
		return takeBack(conn, &r, "the daemon stopped during this run", db.nowMs())
	})
	return r, err
}

// RecoverStranded frees what member id recorded as running but no longer
// holds, which only a write lost to a store outage leaves behind: its runs
// still recorded as running fail (their tokens die with them) and its
// agents still recorded as running go back to idle, to be woken. holds
// says whether the member is in a run of an agent (scheduler.Holds); only
// what was recorded before the call is considered, so that a run that
// starts meanwhile is never taken for stranded. Its plugin processes are
// forgotten and returned, for the caller to kill those still alive.
func (db *DB) RecoverStranded(ctx context.Context, id string, holds func(AgentKey) bool) (Recovered, error) {
	before := db.nowMs() // before holds is asked: a run that starts later was recorded at or after it
	var r Recovered
	err := db.write(ctx, func(conn querier) error {
		r = Recovered{Daemon: Daemon{ID: id}}
		now := db.nowMs()
		var runs []Run
		err := conn.execute(`SELECT `+runColumns+` FROM runs WHERE daemon = ? AND state IN ('queued', 'running') AND started_at < ? ORDER BY id`,
			&execOptions{Args: []any{id, before}, ResultFunc: func(s row) error {
				run, err := scanRun(s)
				runs = append(runs, run)
				return err
			}})
		if err != nil {
			return err
		}
		for _, run := range runs {
			if holds(run.Agent) {
				continue
			}
			err := conn.execute(`UPDATE runs SET state = 'failed', error = ?, ended_at = ? WHERE id = ? AND state IN ('queued', 'running')`,
				&execOptions{Args: []any{"its end was lost while the store was unreachable", now, run.ID}})
			if err != nil {
				return err
			}
			if conn.changes() == 0 {
				continue
			}
			r.Runs = append(r.Runs, run)
			if err := revokeRunTokens(conn, now, run.ID); err != nil {
				return err
			}
			if err := endRunQuestions(conn, now, run.ID, RunEnded+": its end was lost while the store was unreachable"); err != nil {
				return err
			}
			if err := forgetWorkers(conn, &r, "run_id", run.ID); err != nil {
				return err
			}
		}
		var agents []AgentKey
		err = conn.execute(`SELECT workflow, tag, name FROM agents WHERE daemon = ? AND state = 'running' AND updated_at < ? ORDER BY workflow, tag, name`,
			&execOptions{Args: []any{id, before}, ResultFunc: func(s row) error {
				agents = append(agents, AgentKey{Workflow: s.ColumnText(0), Tag: s.ColumnText(1), Name: s.ColumnText(2)})
				return nil
			}})
		if err != nil {
			return err
		}
		for _, k := range agents {
			if holds(k) {
				continue
			}
			err := conn.execute(`UPDATE agents SET state = 'idle', updated_at = ? WHERE workflow = ? AND tag = ? AND name = ?
				AND daemon = ? AND state = 'running' AND updated_at < ?`,
				&execOptions{Args: []any{now, k.Workflow, k.Tag, k.Name, id, before}})
			if err != nil {
				return err
			}
			if conn.changes() > 0 {
				r.Agents = append(r.Agents, k)
			}
		}
		return nil
	})
	if err == nil && len(r.Runs) > 0 {
		db.tokens.forget()
	}
	return r, err
}

// forgetWorkers moves the workers rows whose column (daemon or run_id)
// is value into r.Workers, for the caller to kill what is still alive.
func forgetWorkers(conn querier, r *Recovered, column, value string) error {
	err := conn.execute(`SELECT run_id, pid, pgid, plugin_path, state FROM workers WHERE `+column+` = ? ORDER BY run_id`,
		&execOptions{Args: []any{value}, ResultFunc: func(s row) error {
			r.Workers = append(r.Workers, Worker{RunID: s.ColumnText(0), PID: s.ColumnInt(1), PGID: s.ColumnInt(2),
				PluginPath: s.ColumnText(3), State: WorkerState(s.ColumnText(4)), Daemon: r.Daemon.ID})
			return nil
		}})
	if err != nil {
		return err
	}
	return conn.execute(`DELETE FROM workers WHERE `+column+` = ?`, &execOptions{Args: []any{value}})
}

// takeBack fails the runs of member r.Daemon.ID, sets its running agents
// idle, forgets its plugin processes and marks it stopped, filling r.
func takeBack(conn querier, r *Recovered, reason string, now int64) error {
	id := r.Daemon.ID
	err := conn.execute(`SELECT `+runColumns+` FROM runs WHERE daemon = ? AND state IN ('queued', 'running') ORDER BY id`,
		&execOptions{Args: []any{id}, ResultFunc: func(s row) error {
			run, err := scanRun(s)
			r.Runs = append(r.Runs, run)
			return err
		}})
	if err != nil {
		return err
	}
	for _, run := range r.Runs {
		if err := conn.execute(`UPDATE runs SET state = 'failed', error = ?, ended_at = ? WHERE id = ?`,
			&execOptions{Args: []any{reason, now, run.ID}}); err != nil {
			return err
		}
		if err := revokeRunTokens(conn, now, run.ID); err != nil {
			return err
		}
		if err := endRunQuestions(conn, now, run.ID, RunEndedDaemonStopped); err != nil {
			return err
		}
		err := conn.execute(`UPDATE agents SET state = 'idle', updated_at = ? WHERE workflow = ? AND tag = ? AND name = ? AND state = 'running'`,
			&execOptions{Args: []any{now, run.Agent.Workflow, run.Agent.Tag, run.Agent.Name}})
		if err != nil {
			return err
		}
		if conn.changes() > 0 {
			r.Agents = append(r.Agents, run.Agent)
		}
	}
	// An agent it moved to running whose run was not yet recorded, or
	// whose run had ended but not yet moved it back to idle.
	err = conn.execute(`UPDATE agents SET state = 'idle', updated_at = ? WHERE daemon = ? AND state = 'running'
		RETURNING workflow, tag, name`,
		&execOptions{Args: []any{now, id}, ResultFunc: func(s row) error {
			r.Agents = append(r.Agents, AgentKey{Workflow: s.ColumnText(0), Tag: s.ColumnText(1), Name: s.ColumnText(2)})
			return nil
		}})
	if err != nil {
		return err
	}
	if err := forgetWorkers(conn, r, "daemon", id); err != nil {
		return err
	}
	return conn.execute(`UPDATE daemons SET stopped_at = ? WHERE id = ? AND stopped_at = 0`, &execOptions{Args: []any{now, id}})
}

// SetWorkflowOwner records which member watches a workflow's file, and
// where that member has it: another member took the file over.
func (db *DB) SetWorkflowOwner(ctx context.Context, s Scope, daemon, sourcePath string) error {
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE workflows SET owner = ?, source_path = ?, updated_at = ? WHERE name = ? AND tag = ?`,
			&execOptions{Args: []any{daemon, sourcePath, db.nowMs(), s.Workflow, s.Tag}})
		if err == nil && conn.changes() == 0 {
			return contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(s.Workflow, s.Tag))
		}
		return err
	})
}

// WorkflowOwners maps each workflow (its target as displayed, "@review"
// or "@review:pr-1") to the member that watches its file.
func (db *DB) WorkflowOwners(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT name, tag, owner FROM workflows WHERE owner <> ''`,
			&execOptions{ResultFunc: func(s row) error {
				out[scopeDisplay(s.ColumnText(0), s.ColumnText(1))] = s.ColumnText(2)
				return nil
			}})
	})
	return out, err
}

// scopeDisplay is a workflow's target as the CLI shows it: "@review" for
// its main tag, "@review:pr-1" for another (host/api's Target.Display).
func scopeDisplay(workflow, tag string) string {
	if tag == "main" {
		return "@" + workflow
	}
	return "@" + workflow + ":" + tag
}
