package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/contract"
)

// backupHelp is backup's long help: what the copy is, and how to put it
// back, which is the one thing a user reads it for in a hurry.
const backupHelp = `Writes a consistent copy of the daemon's SQLite database to <file> while the
daemon keeps working (POST /backup; SQLite's VACUUM INTO reads one snapshot).
The copy is written beside <file> under a temporary name, checked with
PRAGMA quick_check and synced before it takes <file>'s name, so <file> is either
a sound copy or absent; it is one self-contained file (no -wal), mode 0600.
An existing <file> is replaced only with --force. A relative <file> is taken
from this directory. The daemon writes it, on its own machine (mind that
with AGENT_WORKER_URL); with none running, one is started, as for every
command. A big database may need a longer --request-timeout.

To restore a backup: stop the daemon (agent-worker stop --all), copy the
backup over agent-worker.db in the home, delete agent-worker.db-wal and
agent-worker.db-shm if they exist (they belong to the old file), start again.

A daemon whose file is damaged refuses to start and says so; with no backup,
save what SQLite can still read (with any sqlite3, Debian's and macOS's too):
  sqlite3 agent-worker.db .dump | sed '$s/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 recovered.db
and put recovered.db in its place the same way. Where the sqlite3 shell's
.recover works, it saves more: see "A damaged database file" in
docs/troubleshooting.md.

A cluster keeps its state in PostgreSQL: back that up with pg_dump (backup
answers with the command and exits 2).`

func backupCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	e.common(fs)
	force := fs.Bool("force", false, "replace <file> if it exists")
	cmd := leaf("backup", "backup <file> [--force] [--json]",
		"write a checked copy of the daemon's database to a file, while it runs", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return usagef("backup %s: %v", args[0], err)
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			b, err := c.Backup(ctx, contract.BackupRequest{Path: path, Force: *force})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(b)
			}
			e.printf("backed up %s to %s: %s, checked, in %s\n", b.Database, b.Path, byteSize(b.Bytes),
				(time.Duration(b.TookMS) * time.Millisecond).Round(time.Millisecond))
			return nil
		})
	cmd.LongHelp = backupHelp
	return cmd
}

// byteSize is n bytes for people: 512 B, 4.2 MB.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
