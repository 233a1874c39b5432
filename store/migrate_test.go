package store

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

func file(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }

// openErr opens path with migrations and returns the error.
func openErr(t *testing.T, path string, migrations fstest.MapFS) error {
	t.Helper()
	db, err := Open(t.Context(), path, Options{Migrations: migrations})
	if err == nil {
		db.Close()
	}
	return err
}

// wantErr fails unless err mentions every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestTamperedHistoryRefused(t *testing.T) {
	sqliteOnly(t, "edits the SQLite history table")
	t.Parallel()
	path := testPath(t)
	db, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `UPDATE migration_history SET sha256 = 'x' WHERE name = '0001_init.sql'`)
	db.Close()

	_, err = Open(t.Context(), path, Options{})
	wantErr(t, err, "0001_init.sql", "changed after it was applied")
}

func TestMigrationRunner(t *testing.T) {
	sqliteOnly(t, "the runner is tested on SQLite migrations written for it")
	t.Parallel()
	v1 := fstest.MapFS{
		// A trailing comment must not break the script runner.
		"0001_a.sql": file("CREATE TABLE a (x INTEGER);\nINSERT INTO a VALUES (1);\n-- done\n"),
	}

	t.Run("changed file", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		if err := openErr(t, path, v1); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, path, fstest.MapFS{"0001_a.sql": file("CREATE TABLE a (y TEXT);")})
		wantErr(t, err, "migration 0001_a.sql was changed", "restore the original file")
	})

	t.Run("unknown applied migration", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		v2 := fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], "0002_b.sql": file("CREATE TABLE b (x);")}
		if err := openErr(t, path, v2); err != nil {
			t.Fatal(err)
		}
		wantErr(t, openErr(t, path, v1), "0002_b.sql", "newer agent-worker")
	})

	t.Run("new migration sorts before an applied one", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		if err := openErr(t, path, fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], "0003_c.sql": file("CREATE TABLE c (x);")}); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, path, fstest.MapFS{
			"0001_a.sql": v1["0001_a.sql"], "0002_b.sql": file("CREATE TABLE b (x);"), "0003_c.sql": file("CREATE TABLE c (x);"),
		})
		wantErr(t, err, "0002_b.sql", "0003_c.sql")
	})

	t.Run("bad file names", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"1_a.sql", "0001_A.sql", "0001-a.sql", "0001_a.txt", "README.md"} {
			fsys := fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], name: file("SELECT 1;")}
			wantErr(t, openErr(t, testPath(t), fsys), name)
		}
	})

	t.Run("failing migration is rolled back whole", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		err := openErr(t, path, fstest.MapFS{
			"0001_a.sql": v1["0001_a.sql"],
			"0002_b.sql": file("CREATE TABLE partial (x);\nINSERT INTO no_such_table VALUES (1);"),
		})
		wantErr(t, err, "0002_b.sql", "line 2", "no_such_table")

		// The database is still usable at version 1, with nothing of 0002.
		db := openAt(t, path, Options{Migrations: v1})
		var names []string
		for _, h := range readHistory(t, db) {
			names = append(names, h.Name)
		}
		if diff := cmp.Diff([]string{"0001_a.sql"}, names); diff != "" {
			t.Errorf("migration_history (-want +got):\n%s", diff)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM sqlite_schema WHERE name = 'partial'`); n != 0 {
			t.Error("table partial of the failed migration exists")
		}
		if n := queryInt(t, db, `SELECT count(*) FROM a`); n != 1 {
			t.Errorf("table a has %d rows, want 1", n)
		}
	})

	t.Run("foreign key violation", func(t *testing.T) {
		t.Parallel()
		err := openErr(t, testPath(t), fstest.MapFS{
			"0001_a.sql": file("CREATE TABLE p (id INTEGER PRIMARY KEY);\nCREATE TABLE c (p INTEGER REFERENCES p (id));\nINSERT INTO c VALUES (7);"),
		})
		wantErr(t, err, "0001_a.sql", "foreign key", "rows of c")
	})
}

func TestOnlyComments(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"":                              true,
		" ;\n\t;":                       true,
		"-- a\n-- b":                    true,
		"/* a */ -- b\n":                true,
		"/* unterminated":               true,
		"/*/ SELECT 1;":                 true, // still inside the comment
		"-- a\nSELECT 1;":               false,
		"/* a */SELECT 1":               false,
		"; CREATE TABLE t (x);":         false,
		"/**/ INSERT INTO t VALUES (1)": false,
	} {
		if got := onlyComments(s); got != want {
			t.Errorf("onlyComments(%q) = %v, want %v", s, got, want)
		}
	}
}

// Migration 0007 rebuilds agents, runs and workflows to widen their state
// CHECKs: the rows of a database written before it keep every column, the
// new states can be written, and the cascades that point at the rebuilt
// tables still work.
func TestSecondWaveStatesMigrationKeepsRows(t *testing.T) {
	sqliteOnly(t, "a migration of the SQLite schema")
	t.Parallel()
	path := testPath(t)
	before := fstest.MapFS{}
	all, err := fs.ReadDir(sqliteMigrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Name() >= "0007" {
			continue
		}
		b, err := fs.ReadFile(sqliteMigrations(), e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before[e.Name()] = file(string(b))
	}
	old, err := Open(t.Context(), path, Options{Migrations: before})
	if err != nil {
		t.Fatal(err)
	}
	alice := AgentKey{Name: "alice", Workflow: "team", Tag: "t"}
	mustExec(t, old, `INSERT INTO workflows (name, tag, source_path, config_yaml, state, error, created_at, updated_at, workdir,
		docs_provider, docs_owner, long_message_chars, params_json, vars_json, docs_dir, started_at)
		VALUES ('team', 't', '/w/team.yaml', 'agents: {}', 'stopped', 'bad edit', 1, 1, '/w', 'sqlite', 'lead', 500, '{"pr":"7"}', '{"sha":"abc"}', '/w/docs', 9)`)
	mustExec(t, old, `INSERT INTO agents (name, workflow, tag, backend, model, system, schedule, wakeup_prompt, config_json,
		state, task, error, created_at, updated_at, status)
		VALUES ('alice', 'team', 't', 'mock', 'm1', 'be brief', '@daily', 'wake', '{"k":1}', 'failed', 'PR 7', 'boom', 2, 3, 'busy')`)
	mustExec(t, old, `INSERT INTO runs (id, agent, workflow, tag, backend, plugin_sha256, attempt, state, started_at, ended_at,
		inbox_until_seq, error, usage_json) VALUES ('run_1', 'alice', 'team', 't', 'mock', 'ab', 2, 'cancelled', 4, 5, 6, 'stop', '{"x":1}')`)
	mustExec(t, old, `INSERT INTO run_events (run_id, n, kind, data, at) VALUES ('run_1', 1, 'text', '"hi"', 4)`)
	mustExec(t, old, `INSERT INTO inbox_ack (workflow, tag, agent, cursor, updated_at) VALUES ('team', 't', 'alice', 0, 1)`)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db := openAt(t, path, Options{})
	ctx := t.Context()
	a, err := db.GetAgent(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != contract.AgentFailed || a.Backend != "mock" || a.Model != "m1" || a.System != "be brief" || a.Schedule != "@daily" ||
		a.WakeupPrompt != "wake" || string(a.Config.Extra["k"]) != `1` || a.Task != "PR 7" || a.Error != "boom" || a.Status != "busy" ||
		a.CreatedAt.UnixMilli() != 2 || a.UpdatedAt.UnixMilli() != 3 {
		t.Errorf("agent after migration = %+v", a)
	}
	r, events, err := db.GetRun(ctx, "run_1")
	if err != nil || r.State != contract.RunCancelled || r.Attempt != 2 || r.PluginSHA256 != "ab" || r.InboxUntilSeq != 6 ||
		r.Error != "stop" || string(r.Usage) != `{"x":1}` || r.EndedAt.UnixMilli() != 5 || len(events) != 1 {
		t.Errorf("run after migration = %+v, %d events, %v", r, len(events), err)
	}
	w, err := db.GetWorkflow(ctx, "team", "t")
	if err != nil || w.State != contract.WorkflowStopped || w.SourcePath != "/w/team.yaml" || w.Error != "bad edit" || w.Workdir != "/w" ||
		w.DocsProvider != "sqlite" || w.DocsOwner != "lead" || w.LongMessageChars != 500 || w.Params["pr"] != "7" || w.Vars["sha"] != "abc" ||
		w.DocsDir != "/w/docs" || w.StartedAt.UnixMilli() != 9 {
		t.Errorf("workflow after migration = %+v, %v", w, err)
	}
	if err := db.SetAgentState(ctx, alice, contract.AgentOverBudget, ""); err != nil {
		t.Errorf("over_budget after migration: %v", err)
	}
	if err := db.SetWorkflowState(ctx, "team", "t", contract.WorkflowPaused, ""); err != nil {
		t.Errorf("a paused workflow after migration: %v", err)
	}
	if err := db.FinishRun(ctx, "run_1", contract.RunTimedOut, "too slow", nil); err != nil {
		t.Errorf("timed_out after migration: %v", err)
	}
	if err := db.DeleteWorkflow(ctx, "team", "t"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"agents", "runs", "run_events", "inbox_ack"} {
		if n := queryInt(t, db, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%s keeps %d rows after its workflow was deleted: the cascade is broken", table, n)
		}
	}
}
