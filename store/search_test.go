package store

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

func TestParseSearchQuery(t *testing.T) {
	t.Parallel()
	ok := map[string]struct{ fts, ts string }{
		`migrating`:             {`"migrating"`, `migrating`},
		`  data   migration `:   {`"data" AND "migration"`, `data & migration`},
		`"write ahead" log`:     {`"write ahead" AND "log"`, `(write <-> ahead) & log`},
		`migr*`:                 {`"migr"*`, `migr:*`},
		`"write ahe"*`:          {`"write ahe"*`, `(write <-> ahe:*)`},
		`foo-bar`:               {`"foo bar"`, `(foo <-> bar)`},
		`Ünïcode café`:          {`"Ünïcode" AND "café"`, `Ünïcode & café`},
		`NEAR AND OR NOT`:       {`"NEAR" AND "AND" AND "OR" AND "NOT"`, `NEAR & AND & OR & NOT`},
		`it's - ( ) : ^ + a:b`:  {`"it s" AND "a b"`, `(it <-> s) & (a <-> b)`},
		`"quoted"next`:          {`"quoted" AND "next"`, `quoted & next`},
		`x'); DROP TABLE m; --`: {`"x" AND "DROP" AND "TABLE" AND "m"`, `x & DROP & TABLE & m`},
	}
	for q, want := range ok {
		terms, err := parseSearchQuery(q)
		if err != nil {
			t.Errorf("parse %q: %v", q, err)
			continue
		}
		if got := fts5Match(terms); got != want.fts {
			t.Errorf("fts5 of %q = %s, want %s", q, got, want.fts)
		}
		if got := tsQuery(terms); got != want.ts {
			t.Errorf("tsquery of %q = %s, want %s", q, got, want.ts)
		}
	}
	bad := map[string]string{
		``:                                 "empty",
		`   `:                              "empty",
		`"unclosed phrase`:                 "unclosed quote",
		`*`:                                "without a word",
		`""`:                               "without a word",
		`a*b`:                              "* may only end a word",
		`*foo`:                             "* may only end a word",
		`foo-*`:                            "* must follow a letter or digit",
		strings.Repeat("w ", 17):           "more than 16",
		strings.Repeat("x", 1001):          "at most 1000",
		"bad \xff utf8":                    "UTF-8",
		`"phrase" "and another`:            "unclosed quote",
		`a** `:                             "* may only end a word",
		`... --- ???`:                      "empty",
		`"   "`:                            "without a word",
		`"ok" * `:                          "without a word",
		`valid "then unclosed`:             "unclosed",
		`"ok"` + strings.Repeat(`"x"`, 16): "more than 16",
	}
	for q, want := range bad {
		_, err := parseSearchQuery(q)
		if contract.ErrorCode(err) != contract.CodeInvalid || !strings.Contains(err.Error(), want) {
			t.Errorf("parse %q: %v, want an invalid error mentioning %q", q, err, want)
		}
	}
}

// searchTeam is wf:main with alice, bob and carol, a channel, a DM from
// alice to bob, a document and a transcript line of a run of carol's.
func searchTeam(t *testing.T) *DB {
	t.Helper()
	db, _ := teamDB(t, "alice", "bob", "carol")
	ctx := t.Context()
	for _, m := range []NewMessage{
		{Workflow: "wf", Tag: "main", Sender: "alice", Content: "The migration of the database is done"},
		{Workflow: "wf", Tag: "main", Sender: "bob", Content: "@alice nice, what about backups?", Recipients: []string{"alice"}},
		{Workflow: "wf", Tag: "main", Sender: "alice", To: "bob", Content: "secret: the payroll password rotates tonight", Recipients: []string{"bob"}},
		{Workflow: "other", Tag: "main", Sender: "dave", Content: "migration elsewhere, not in wf"},
	} {
		if m.Workflow == "other" {
			addMembers(t, db, Scope{Workflow: "other", Tag: "main"}, "dave")
		}
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.IndexDocument(ctx, wfMain, "plan.md", "# Plan\nWe ship the quarterly roadmap on Friday."); err != nil {
		t.Fatal(err)
	}
	carol := AgentKey{Name: "carol", Workflow: "wf", Tag: "main"}
	if _, err := db.StartRun(ctx, Run{ID: "run_c1", Agent: carol, Backend: "mock", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1_700_000_000_000)
	err := db.AppendRunEvents(ctx, "run_c1", []RunEvent{
		{N: 1, Kind: "prompt", Data: `{"system":"zebra prompt words are not indexed"}`, At: at},
		{N: 2, Kind: "text", Data: `{"text":"Looking at the flaky integration tests now"}`, At: at},
		{N: 3, Kind: "tool_call", Data: `{"ID":"1","Name":"run_shell","Args":{"cmd":"zebra"}}`, At: at},
		{N: 4, Kind: "tool_result", Data: `{"ID":"1","Name":"run_shell","Result":"FAIL TestKangarooHandler (0.02s)"}`, At: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// what reduces hits to what a user reads off them: what each is and the
// words its snippet marks (engines cut snippets differently).
func what(hits []SearchHit) []string {
	out := []string{}
	for _, h := range hits {
		marked := []string{}
		for _, part := range strings.Split(h.Snippet, HitStart)[1:] {
			marked = append(marked, strings.Split(part, HitEnd)[0])
		}
		id := h.Sender
		switch h.Kind {
		case SearchDoc:
			id = "doc " + h.Path
		case SearchRun:
			id = "run " + h.RunID + " by " + h.Agent
		}
		out = append(out, id+": "+strings.Join(marked, " "))
	}
	return out
}

func TestSearchFindsWhatWasWritten(t *testing.T) {
	t.Parallel()
	db := searchTeam(t)
	ctx := t.Context()
	cases := map[string]struct {
		opts SearchOptions
		want []string
	}{
		"a stemmed word": {SearchOptions{Query: "migrating"},
			[]string{"alice: migration"}},
		"a prefix": {SearchOptions{Query: "backup*"},
			[]string{"bob: backups"}},
		"a phrase": {SearchOptions{Query: `"quarterly roadmap"`},
			[]string{"doc plan.md: quarterly roadmap"}},
		"a phrase out of order finds nothing": {SearchOptions{Query: `"roadmap quarterly"`}, []string{}},
		"all words must match":                {SearchOptions{Query: "migration payroll"}, []string{}},
		"a transcript's text": {SearchOptions{Query: "flaky"},
			[]string{"run run_c1 by carol: flaky"}},
		"a tool result": {SearchOptions{Query: "TestKangarooHandler"},
			[]string{"run run_c1 by carol: TestKangarooHandler"}},
		"prompts and tool calls are not indexed": {SearchOptions{Query: "zebra"}, []string{}},
		"the owner finds a DM": {SearchOptions{Query: "payroll"},
			[]string{"alice: payroll"}},
		"its sender finds a DM": {SearchOptions{Query: "payroll", Viewer: "alice"},
			[]string{"alice: payroll"}},
		"its recipient finds a DM": {SearchOptions{Query: "payroll", Viewer: "bob"},
			[]string{"alice: payroll"}},
		"a third agent does not":               {SearchOptions{Query: "payroll", Viewer: "carol"}, []string{}},
		"an agent finds its own transcript":    {SearchOptions{Query: "flaky", Viewer: "carol"}, []string{"run run_c1 by carol: flaky"}},
		"but not a teammate's":                 {SearchOptions{Query: "flaky", Viewer: "bob"}, []string{}},
		"every member finds documents":         {SearchOptions{Query: "roadmap", Viewer: "bob"}, []string{"doc plan.md: roadmap"}},
		"kind message leaves out the others":   {SearchOptions{Query: "roadmap", Kind: SearchMessage}, []string{}},
		"kind doc":                             {SearchOptions{Query: "roadmap", Kind: SearchDoc}, []string{"doc plan.md: roadmap"}},
		"kind run":                             {SearchOptions{Query: "flaky", Kind: SearchRun}, []string{"run run_c1 by carol: flaky"}},
		"case and accents are folded":          {SearchOptions{Query: "MIGRATION"}, []string{"alice: migration"}},
		"another workflow's messages are kept": {SearchOptions{Query: "elsewhere"}, []string{}},
	}
	for name, c := range cases {
		hits, err := db.Search(ctx, wfMain, c.opts)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(c.want, what(hits)); diff != "" {
			t.Errorf("%s: %+v (-want +got):\n%s", name, c.opts, diff)
		}
	}
	// A message hit names the message: its seq, sender and time.
	hits, err := db.Search(ctx, wfMain, SearchOptions{Query: "payroll"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("payroll: %v, %v", hits, err)
	}
	if h := hits[0]; h.Seq != 3 || h.Sender != "alice" || h.To != "bob" || h.At.IsZero() || h.Score <= 0 ||
		!strings.Contains(h.Snippet, "«payroll» password rotates") {
		t.Errorf("DM hit = %+v", h)
	}
}

func TestSearchRanksAndLimits(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	for _, c := range []string{
		"deploy", "deploy deploy deploy the deploy", "nothing", "a deploy among many other words in a long line of text",
	} {
		if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := db.Search(ctx, wfMain, SearchOptions{Query: "deploy", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || !strings.Contains(hits[0].Snippet, "«deploy» «deploy»") || hits[0].Score < hits[1].Score {
		t.Errorf("the densest message first, two hits: %+v", hits)
	}
	for _, o := range []SearchOptions{{Query: "x", Limit: -1}, {Query: "x", Limit: 101}, {Query: "x", Kind: "task"}, {Query: `"x`}} {
		if _, err := db.Search(ctx, wfMain, o); contract.ErrorCode(err) != contract.CodeInvalid {
			t.Errorf("%+v: %v, want invalid", o, err)
		}
	}
}

func TestSearchDocumentsKeepTheirCurrentContent(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ctx := t.Context()
	find := func(q string) []string {
		t.Helper()
		hits, err := db.Search(ctx, wfMain, SearchOptions{Query: q, Kind: SearchDoc})
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, h := range hits {
			paths = append(paths, h.Path)
		}
		return paths
	}
	if err := db.IndexDocument(ctx, wfMain, "notes.md", "first draft about penguins"); err != nil {
		t.Fatal(err)
	}
	if err := db.IndexDocument(ctx, wfMain, "notes.md", "second draft about walruses"); err != nil {
		t.Fatal(err)
	}
	if got := find("penguins"); got != nil {
		t.Errorf("the replaced text is still found: %v", got)
	}
	if got := find("walruses"); !cmp.Equal(got, []string{"notes.md"}) {
		t.Errorf("walrus: %v", got)
	}
	if err := db.IndexDocument(ctx, wfMain, "notes.md", ""); err != nil {
		t.Fatal(err)
	}
	if got := find("walruses"); got != nil {
		t.Errorf("an emptied document is still found: %v", got)
	}
	// A deleted workflow takes its entries along.
	if err := db.IndexDocument(ctx, wfMain, "a.md", "narwhal"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "narwhal"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteWorkflow(ctx, "wf", "main"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM search_text`); n != 0 {
		t.Errorf("%d search_text rows left after the workflow was deleted", n)
	}
	// Its messages are not found in a workflow of the same name made
	// again (seqs are never reused).
	addMembers(t, db, wfMain, "alice")
	if hits, err := db.Search(ctx, wfMain, SearchOptions{Query: "narwhal"}); err != nil || len(hits) != 0 {
		t.Errorf("a deleted workflow's message is found again: %+v, %v", hits, err)
	}
}

// A database written before search existed is indexed by the migration:
// its messages and the text of its transcripts are found.
func TestSearchMigrationIndexesExistingRows(t *testing.T) {
	t.Parallel()
	all, first := sqliteMigrations(), "0020"
	if testEngine == "postgres" {
		all, first = postgresMigrations(), "0006"
	}
	before := fstest.MapFS{}
	entries, err := fs.ReadDir(all, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() < first {
			b, err := fs.ReadFile(all, e.Name())
			if err != nil {
				t.Fatal(err)
			}
			before[e.Name()] = file(string(b))
		}
	}
	path := testPath(t)
	old, err := Open(t.Context(), path, Options{Migrations: before})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, old, `INSERT INTO workflows (name, tag, created_at, updated_at) VALUES ('wf', 'main', 1, 1)`)
	mustExec(t, old, `INSERT INTO messages (id, workflow, tag, sender, content, created_at) VALUES ('msg_1', 'wf', 'main', 'alice', 'we are migrating the servers', 2)`)
	mustExec(t, old, `INSERT INTO runs (id, agent, workflow, tag, backend, attempt, state, started_at) VALUES ('run_1', 'alice', 'wf', 'main', 'mock', 1, 'succeeded', 3)`)
	mustExec(t, old, `INSERT INTO run_events (run_id, n, kind, data, at) VALUES
		('run_1', 1, 'text', '{"text":"reading the changelog"}', 4),
		('run_1', 2, 'tool_result', '{"Name":"x","Result":"exit status 3 in gizmo.go"}', 4),
		('run_1', 3, 'text', 'not json at all', 4),
		('run_1', 4, 'usage', '{"text":"usage is not indexed"}', 4)`)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	db := openAt(t, path, Options{})
	for q, want := range map[string][]string{
		"migration":  {"alice: migrating"},
		"changelog":  {"run run_1 by alice: changelog"},
		"gizmo":      {"run run_1 by alice: gizmo"},
		"usage":      {},
		`"not json"`: {},
	} {
		hits, err := db.Search(t.Context(), wfMain, SearchOptions{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, what(hits)); diff != "" {
			t.Errorf("%s after the migration (-want +got):\n%s", q, diff)
		}
	}
}

// A word in more messages than a search ranks is ranked among its newest
// matches: the densest of those comes first, each hit with its snippet.
func TestSearchRanksTheNewestMatches(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice")
	ms := make([]NewMessage, rankedMatches+50)
	for i := range ms {
		c := fmt.Sprintf("deploy number %d of many", i)
		switch i {
		case 10:
			c = "deploy deploy deploy deploy, an old one"
		case rankedMatches + 40:
			c = "deploy deploy deploy, a new one"
		}
		ms[i] = NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: c}
	}
	sent, err := db.AppendMessages(t.Context(), ms)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search(t.Context(), wfMain, SearchOptions{Query: "deploy", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || hits[0].Seq != sent[rankedMatches+40].Seq {
		t.Fatalf("want the densest of the newest matches first: %+v", hits)
	}
	for _, h := range hits {
		if !strings.Contains(h.Snippet, HitStart+"deploy"+HitEnd) || h.Seq <= sent[49].Seq {
			t.Errorf("hit %+v: want a new message with its snippet", h)
		}
	}
	// A prefix* is not ranked (on SQLite): the newest matches come first.
	if testEngine == "postgres" {
		return
	}
	hits, err = db.Search(t.Context(), wfMain, SearchOptions{Query: "deplo*", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hits {
		if want := sent[len(sent)-1-i].Seq; h.Seq != want || h.Score != 0 || !strings.Contains(h.Snippet, HitStart+"deploy"+HitEnd) {
			t.Errorf("prefix hit %d = %+v, want seq %d unranked with its snippet", i, h, want)
		}
	}
}

// On SQLite messages reach the index a batch at a time: a search finds a
// message the indexer has not reached yet, the indexer reaches it on its
// own a moment later, a message the daemon died before indexing is indexed
// after the restart, and none is ever indexed twice.
func TestSearchIndexesMessagesInBatches(t *testing.T) {
	sqliteOnly(t, "PostgreSQL keeps each message's vector in its row")
	t.Parallel()
	ctx := t.Context()
	path := testPath(t)
	// No background batch while the test looks: only a search indexes.
	searchOnly := Options{indexDelay: time.Hour}
	find := func(db *DB, q string, want ...string) {
		t.Helper()
		hits, err := db.Search(ctx, wfMain, SearchOptions{Query: q, Kind: SearchMessage})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, what(hits)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", q, diff)
		}
	}
	mark := func(db *DB) int { return queryInt(t, db, `SELECT seq FROM messages_fts_done`) }
	reopen := func(db *DB, opts Options) *DB {
		t.Helper()
		if db != nil {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
		db, err := Open(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // once the test has closed it, a no-op
		return db
	}

	db := reopen(nil, searchOnly)
	addMembers(t, db, wfMain, "alice")
	m, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "the rollout of the cache layer starts now"})
	if err != nil {
		t.Fatal(err)
	}
	if got := mark(db); got >= int(m.Seq) {
		t.Fatalf("mark at #%d before any batch or search, message #%d", got, m.Seq)
	}
	find(db, "rollouts", "alice: rollout")

	// Without a search: the indexer's own batch moves the mark.
	db = reopen(db, Options{})
	m2, err := db.AppendMessage(ctx, NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: "benchmarks first, then the rollout"})
	if err != nil {
		t.Fatal(err)
	}
	// The indexer's mark sends no event: it is polled, with testkit's
	// deadline.
	testkit.Eventually(t, fmt.Sprintf("the indexer to reach message #%d", m2.Seq), func() error {
		if got := mark(db); got != int(m2.Seq) {
			return fmt.Errorf("mark at #%d", got)
		}
		return nil
	})
	if n := queryInt(t, db, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'benchmark'`); n != 1 {
		t.Errorf("the indexer's batch holds %d messages matching benchmark, want 1", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A message committed by a daemon that died before its batch: the row
	// is there, the mark is behind it.
	raw, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.Execute(raw, `INSERT INTO messages (id, workflow, tag, sender, content, created_at) VALUES ('msg_x', 'wf', 'main', 'alice', 'the rollout is paused by the outage', 5)`, nil)
	if err == nil {
		err = raw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, searchOnly)
	if got, last := mark(db), queryInt(t, db, `SELECT max(seq) FROM messages`); got >= last {
		t.Fatalf("mark at #%d after the restart, last message #%d: nothing left for the search to index", got, last)
	}
	find(db, "rollout", "alice: rollout", "alice: rollout", "alice: rollout")
	find(db, "outage", "alice: outage")
	find(db, "rollout starts", "alice: rollout starts")
	if n := queryInt(t, db, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'rollout'`); n != 3 {
		t.Errorf("the index holds %d messages matching rollout, want 3 (each once)", n)
	}
	if got, last := mark(db), queryInt(t, db, `SELECT max(seq) FROM messages`); got != last || last <= int(m.Seq) {
		t.Errorf("mark at #%d after the restart's search, last message #%d", got, last)
	}
}

// An import larger than one indexing batch (indexed indexBatch messages
// per transaction) is found whole: its first and last message, each line
// once, the mark at its end.
func TestSearchIndexesALargeImportInBatches(t *testing.T) {
	sqliteOnly(t, "PostgreSQL keeps each message's vector in its row")
	t.Parallel()
	// No background batch: the search alone must index the import.
	db := openAt(t, testPath(t), Options{indexDelay: time.Hour})
	addMembers(t, db, wfMain, "alice")
	ms := make([]NewMessage, indexBatch+500)
	for i := range ms {
		ms[i] = NewMessage{Workflow: "wf", Tag: "main", Sender: "alice", Content: fmt.Sprintf("imported line %d", i)}
	}
	ms[0].Content, ms[len(ms)-1].Content = "the first quokka", "the last wombat"
	out, err := db.AppendMessages(t.Context(), ms)
	if err != nil {
		t.Fatal(err)
	}
	// The last first: one search must index the whole import.
	for _, q := range []string{"wombat", "quokka"} {
		want := []string{"alice: " + q}
		hits, err := db.Search(t.Context(), wfMain, SearchOptions{Query: q, Kind: SearchMessage})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, what(hits)); diff != "" {
			t.Errorf("search %q after the import (-want +got):\n%s", q, diff)
		}
	}
	if got := queryInt(t, db, `SELECT seq FROM messages_fts_done`); got != int(out[len(out)-1].Seq) {
		t.Errorf("mark at #%d, want the import's last message #%d", got, out[len(out)-1].Seq)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'imported'`); n != indexBatch+498 {
		t.Errorf("the index holds %d imported lines, want %d", n, indexBatch+498)
	}
}
