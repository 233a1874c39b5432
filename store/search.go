package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// Search kinds: what a hit is.
const (
	SearchMessage = "message"
	SearchDoc     = "doc"
	SearchRun     = "run"
)

// Snippet marks: each hit in a snippet is between these, so every surface
// (CLI, console, an agent's tool result) can show or style it.
const (
	HitStart = "«"
	HitEnd   = "»"
)

// Bounds of a search: a query is a few words, not a document, and a page of
// hits fits a prompt.
const (
	maxQueryBytes      = 1000
	maxQueryTerms      = 16
	defaultSearchLimit = 20
	maxSearchLimit     = 100
)

// SearchOptions is one search of one workflow:tag.
type SearchOptions struct {
	// Query is the user's text: words (all must match, stemmed), "quoted
	// phrases" and prefix* words.
	Query string
	// Kind keeps one kind of hit (SearchMessage, SearchDoc, SearchRun);
	// "" searches all three.
	Kind string
	// Limit is the number of hits: 0 means 20, at most 100.
	Limit int
	// Viewer is the agent searching: it finds the direct messages it sent
	// or received and only its own runs' transcripts. "" is the owner,
	// who finds everything.
	Viewer string
}

// Tool is the hit as the daemon's tools show it (team_search, and the
// earlier notes of an effort's start).
func (h SearchHit) Tool() tools.SearchHit {
	return tools.SearchHit{Kind: h.Kind, Seq: h.Seq, From: h.Sender, To: h.To, File: h.Path,
		RunID: h.RunID, Event: h.Event, Snippet: h.Snippet, At: h.At}
}

// SearchHit is one thing found, best first.
type SearchHit struct {
	Kind          string
	Workflow, Tag string
	// Seq, Sender and To name a message (To is a DM's recipient).
	Seq    int64
	Sender string
	To     string
	// Path names a document.
	Path string
	// RunID, Agent and Event name a line of a run's transcript.
	RunID string
	Agent string
	Event int
	// Snippet is the text around the hits, each hit between HitStart and
	// HitEnd.
	Snippet string
	// Score ranks the hits: higher is better (BM25 on SQLite, ts_rank on
	// PostgreSQL; comparable only within one search). It is 0 for a kind
	// whose matches were too common to rank, which come newest first.
	Score float64
	At    time.Time
}

// searchTerm is one part of a parsed query: a word, or a phrase of words
// that must appear in order; prefix makes its last word a prefix.
type searchTerm struct {
	words  []string
	prefix bool
}

// parseSearchQuery checks a user's query and splits it into terms: the one
// parser every engine's expression is built from, so a malformed query is
// an invalid-input error that names the problem, never an engine's syntax
// error. Words are runs of letters and digits; anything else separates
// them, and a bare word with separators inside (foo-bar, v1.2) is a
// phrase.
func parseSearchQuery(q string) ([]searchTerm, error) {
	if len(q) > maxQueryBytes {
		return nil, contract.Errorf(contract.CodeInvalid, "search query is %d bytes: at most %d", len(q), maxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return nil, contract.Errorf(contract.CodeInvalid, "search query is not valid UTF-8")
	}
	var terms []searchTerm
	for rest := strings.TrimSpace(q); rest != ""; rest = strings.TrimSpace(rest) {
		var raw string
		quoted := rest[0] == '"'
		if quoted {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, contract.Errorf(contract.CodeInvalid, "search query %q has an unclosed quote: close the phrase with \"", q)
			}
			raw, rest = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(rest)
			}
			raw, rest = rest[:end], rest[end:]
		}
		t := searchTerm{}
		if strings.HasSuffix(raw, "*") {
			t.prefix, raw = true, strings.TrimSuffix(raw, "*")
		} else if quoted && strings.HasPrefix(rest, "*") {
			t.prefix, rest = true, rest[1:] // "a phrase"*
		}
		if strings.Contains(raw, "*") {
			return nil, contract.Errorf(contract.CodeInvalid, "search query %q: * may only end a word (prefix*)", q)
		}
		t.words = strings.FieldsFunc(raw, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(t.words) == 0 {
			if quoted || t.prefix {
				return nil, contract.Errorf(contract.CodeInvalid, "search query %q has a phrase or prefix* without a word in it", q)
			}
			continue // punctuation on its own separates, as it does inside words
		}
		if t.prefix && !strings.HasSuffix(raw, t.words[len(t.words)-1]) {
			return nil, contract.Errorf(contract.CodeInvalid, "search query %q: * must follow a letter or digit (prefix*)", q)
		}
		terms = append(terms, t)
		if len(terms) > maxQueryTerms {
			return nil, contract.Errorf(contract.CodeInvalid, "search query %q has more than %d words and phrases", q, maxQueryTerms)
		}
	}
	if len(terms) == 0 {
		return nil, contract.Errorf(contract.CodeInvalid, "search query is empty: give words, \"a phrase\" or a prefix*")
	}
	return terms, nil
}

// fts5Match is the query as an FTS5 MATCH expression: every term quoted
// (the words hold only letters and digits, so nothing in them is syntax),
// all of them required.
func fts5Match(terms []searchTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + strings.Join(t.words, " ") + `"`
		if t.prefix {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, " AND ")
}

// tsQuery is the query as PostgreSQL to_tsquery text: phrases with <->,
// prefixes with :*, all terms joined with &. The words hold only letters
// and digits, so nothing in them is tsquery syntax.
func tsQuery(terms []searchTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		words := slices.Clone(t.words)
		if t.prefix {
			words[len(words)-1] += ":*"
		}
		parts[i] = strings.Join(words, " <-> ")
		if len(words) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " & ")
}

// Search finds o.Query in a workflow:tag's messages, documents and run
// transcripts, as o.Viewer may see them, best first.
func (db *DB) Search(ctx context.Context, s Scope, o SearchOptions) ([]SearchHit, error) {
	terms, err := parseSearchQuery(o.Query)
	if err != nil {
		return nil, err
	}
	limit := o.Limit
	switch {
	case limit < 0 || limit > maxSearchLimit:
		return nil, contract.Errorf(contract.CodeInvalid, "limit %d is out of range: use 1 to %d (0 means %d)", limit, maxSearchLimit, defaultSearchLimit)
	case limit == 0:
		limit = defaultSearchLimit
	}
	switch o.Kind {
	case "", SearchMessage, SearchDoc, SearchRun:
	default:
		return nil, contract.Errorf(contract.CodeInvalid, "unknown search kind %q: use message, doc or run", o.Kind)
	}
	if o.Kind == "" || o.Kind == SearchMessage {
		// Every message committed so far is found.
		if err := db.indexMessages(ctx); err != nil {
			return nil, err
		}
	}
	var hits []SearchHit
	err = db.snapshot(ctx, func(conn querier) error {
		if o.Kind == "" || o.Kind == SearchMessage {
			if err := searchMessages(conn, s, terms, o.Viewer, limit, &hits); err != nil {
				return err
			}
		}
		for _, kind := range []string{SearchDoc, SearchRun} {
			if o.Kind == "" || o.Kind == kind {
				if err := searchText(conn, s, kind, terms, o.Viewer, limit, &hits); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Each kind came best first; merged, the best of all come first.
	slices.SortStableFunc(hits, func(a, b SearchHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return hits[:min(len(hits), limit)], nil
}

// rankedMatches bounds the work of one ranked search: BM25 (ts_rank)
// ranks a team's newest rankedMatches matches, not all of them. A query
// with fewer matches is ranked whole; a commoner one finds the best of
// its newest matches, which is what a channel's reader wants of
// "deploy". On SQLite a query with a common word or a prefix* is not
// ranked at all (rankable) and comes newest first. Snippets are cut for
// the hits returned only.
const rankedMatches = 500

// The snippet and headline settings: about 16 words around the hits.
const (
	// SQLite ranks first, then cuts snippets for the best (snippets):
	// FTS5 walks the matches newest first (ORDER BY rowid DESC is done by
	// the index, the plan has no sort), the join to messages keeps the
	// team's, drops a deleted workflow's leftovers and the DMs the viewer
	// may not see, and BM25 is computed for rankedMatches rows at most.
	searchMessagesSQLite = `SELECT seq, sender, to_agent, created_at, score, snippet FROM (
		SELECT m.seq, m.sender, coalesce(m.to_agent, '') AS to_agent, m.created_at, %[1]s AS score, %[2]s AS snippet
		FROM messages_fts CROSS JOIN messages AS m ON m.seq = messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND m.workflow = ?2 AND m.tag = ?3
		  AND (?4 = '' OR m.to_agent IS NULL OR m.to_agent = ?4 OR m.sender = ?4)
		ORDER BY messages_fts.rowid DESC LIMIT ?6 + 0)
	ORDER BY score DESC, seq DESC LIMIT ?5 + 0`
	headline               = `'StartSel=` + HitStart + `, StopSel=` + HitEnd + `, MaxWords=20, MinWords=6, MaxFragments=2, FragmentDelimiter=" … "'`
	searchMessagesPostgres = `SELECT seq, sender, to_agent, created_at, ts_headline('english', regexp_replace(content, '[^[:alnum:]]+', ' ', 'g'), q, ` + headline + `), rank
	FROM (SELECT seq, sender, to_agent, created_at, content, q, ts_rank(search, q) AS rank
		FROM (SELECT m.seq, m.sender, coalesce(m.to_agent, '') AS to_agent, m.created_at, m.content, m.search, q
			FROM messages AS m, to_tsquery('english', ?1) AS q
			WHERE m.search @@ q AND m.workflow = ?2 AND m.tag = ?3
			  AND (?4 = '' OR m.to_agent IS NULL OR m.to_agent = ?4 OR m.sender = ?4)
			ORDER BY m.seq DESC LIMIT ?6 + 0) AS newest
		ORDER BY rank DESC, seq DESC LIMIT ?5 + 0) AS best
	ORDER BY rank DESC, seq DESC`

	searchTextSQLite = `SELECT id, ref, n, agent, at, score, snippet FROM (
		SELECT t.id, t.ref, t.n, t.agent, t.at, %[1]s AS score, %[2]s AS snippet
		FROM search_text_fts CROSS JOIN search_text AS t ON t.id = search_text_fts.rowid
		WHERE search_text_fts MATCH ?1 AND t.kind = ?2 AND t.workflow = ?3 AND t.tag = ?4
		  AND (?5 = '' OR t.agent = '' OR t.agent = ?5)
		ORDER BY search_text_fts.rowid DESC LIMIT ?7 + 0)
	ORDER BY score DESC, id DESC LIMIT ?6 + 0`
	searchTextPostgres = `SELECT id, ref, n, agent, at, ts_headline('english', regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'), q, ` + headline + `), rank
	FROM (SELECT id, ref, n, agent, at, body, q, ts_rank(search, q) AS rank
		FROM (SELECT t.id, t.ref, t.n, t.agent, t.at, t.body, t.search, q
			FROM search_text AS t, to_tsquery('english', ?1) AS q
			WHERE t.search @@ q AND t.kind = ?2 AND t.workflow = ?3 AND t.tag = ?4
			  AND (?5 = '' OR t.agent = '' OR t.agent = ?5)
			ORDER BY t.id DESC LIMIT ?7 + 0) AS newest
		ORDER BY rank DESC, id DESC LIMIT ?6 + 0) AS best
	ORDER BY rank DESC, id DESC`

	// The snippets of the hits ?2 (a JSON array of rowids): one pass over
	// the matches between the first and the last (the query's doclists
	// are read once, not once per hit), snippet() run for the hits alone.
	snippetsSQLite = `SELECT rowid, CASE WHEN rowid IN (SELECT value FROM json_each(?2)) THEN %[2]s END
	FROM %[1]s WHERE %[1]s MATCH ?1 AND rowid BETWEEN ?3 AND ?4`
)

// snippetOf is the snippet of the current row of an FTS5 table.
func snippetOf(table string) string {
	return `snippet(` + table + `, 0, '` + HitStart + `', '` + HitEnd + `', '…', 16)`
}

var (
	snippetsMessagesSQLite = fmt.Sprintf(snippetsSQLite, "messages_fts", snippetOf("messages_fts"))
	snippetsTextSQLite     = fmt.Sprintf(snippetsSQLite, "search_text_fts", snippetOf("search_text_fts"))
	// The SQLite searches ranked by BM25 (snippets cut afterwards), and
	// newest first (score 0) for a query too common to rank (rankable):
	// its first rows are its hits, so they take their snippets at once
	// and a prefix*'s doclists are merged once.
	rankedMessagesSQLite = fmt.Sprintf(searchMessagesSQLite, "-bm25(messages_fts)", "NULL")
	newestMessagesSQLite = fmt.Sprintf(searchMessagesSQLite, "0.0", snippetOf("messages_fts"))
	rankedTextSQLite     = fmt.Sprintf(searchTextSQLite, "-bm25(search_text_fts)", "NULL")
	newestTextSQLite     = fmt.Sprintf(searchTextSQLite, "0.0", snippetOf("search_text_fts"))
)

// commonWord is the number of rows of an FTS5 table from which a word is
// too common to rank by: FTS5's bm25() first counts, in the whole index,
// the rows each phrase of the query is in (its IDF), which for a word in
// every message of a million costs 80 ms before a single row is ranked.
const commonWord = 2_000

// rankable tells whether BM25 may rank a query in table: no term is a
// prefix* (bm25's count would merge the doclists of every word it
// expands to a second time) and every term has a word in fewer than
// commonWord rows, found by counting at most that many. A query that is
// not is answered newest first, which for a word in every other message
// is the useful order anyway; PostgreSQL's ts_rank needs no such count.
func rankable(conn querier, table string, terms []searchTerm) (bool, error) {
	if conn.dialect() == dialectPostgres {
		return true, nil
	}
	for _, t := range terms {
		if t.prefix {
			return false, nil
		}
		rare := false
		for _, w := range t.words {
			n, err := count(conn, `SELECT count(*) FROM (SELECT 1 FROM `+table+` WHERE `+table+` MATCH ? LIMIT ? + 0)`, `"`+w+`"`, commonWord)
			if err != nil {
				return false, err
			}
			if n < commonWord {
				rare = true
				break
			}
		}
		if !rare {
			return false, nil
		}
	}
	return true, nil
}

func searchMessages(conn querier, s Scope, terms []searchTerm, viewer string, limit int, hits *[]SearchHit) error {
	match := pick(conn, fts5Match(terms), tsQuery(terms))
	first := len(*hits)
	var seqs []int64
	ranked, err := rankable(conn, "messages_fts", terms)
	if err != nil {
		return err
	}
	query, candidates := newestMessagesSQLite, limit
	if ranked {
		query, candidates = rankedMessagesSQLite, rankedMatches
	}
	err = conn.execute(pick(conn, query, searchMessagesPostgres), &execOptions{
		Args: []any{match, s.Workflow, s.Tag, viewer, limit, candidates},
		ResultFunc: func(r row) error {
			h := SearchHit{Kind: SearchMessage, Workflow: s.Workflow, Tag: s.Tag,
				Seq: r.ColumnInt64(0), Sender: r.ColumnText(1), To: r.ColumnText(2), At: fromMs(r.ColumnInt64(3))}
			if conn.dialect() == dialectPostgres {
				h.Snippet, h.Score = r.ColumnText(4), r.ColumnFloat(5)
			} else {
				h.Score, h.Snippet = r.ColumnFloat(4), r.ColumnText(5)
			}
			seqs = append(seqs, h.Seq)
			*hits = append(*hits, h)
			return nil
		}})
	if err != nil || conn.dialect() == dialectPostgres || !ranked {
		return err
	}
	return snippets(conn, snippetsMessagesSQLite, match, (*hits)[first:], seqs)
}

// searchText finds documents (kind doc, which every member sees) or
// transcript lines (kind run, which an agent sees only of its own runs).
func searchText(conn querier, s Scope, kind string, terms []searchTerm, viewer string, limit int, hits *[]SearchHit) error {
	match := pick(conn, fts5Match(terms), tsQuery(terms))
	first := len(*hits)
	var ids []int64
	ranked, err := rankable(conn, "search_text_fts", terms)
	if err != nil {
		return err
	}
	query, candidates := newestTextSQLite, limit
	if ranked {
		query, candidates = rankedTextSQLite, rankedMatches
	}
	err = conn.execute(pick(conn, query, searchTextPostgres), &execOptions{
		Args: []any{match, kind, s.Workflow, s.Tag, viewer, limit, candidates},
		ResultFunc: func(r row) error {
			h := SearchHit{Kind: kind, Workflow: s.Workflow, Tag: s.Tag, At: fromMs(r.ColumnInt64(4))}
			if conn.dialect() == dialectPostgres {
				h.Snippet, h.Score = r.ColumnText(5), r.ColumnFloat(6)
			} else {
				h.Score, h.Snippet = r.ColumnFloat(5), r.ColumnText(6)
			}
			if kind == SearchDoc {
				h.Path = r.ColumnText(1)
			} else {
				h.RunID, h.Event, h.Agent = r.ColumnText(1), r.ColumnInt(2), r.ColumnText(3)
			}
			ids = append(ids, r.ColumnInt64(0))
			*hits = append(*hits, h)
			return nil
		}})
	if err != nil || conn.dialect() == dialectPostgres || !ranked {
		return err
	}
	return snippets(conn, snippetsTextSQLite, match, (*hits)[first:], ids)
}

// snippets fills in the snippets of hits, whose FTS5 rowids are rowids
// (in the same order), with one pass over the matches between them.
func snippets(conn querier, query, match string, hits []SearchHit, rowids []int64) error {
	if len(hits) == 0 {
		return nil
	}
	at := make(map[int64]int, len(rowids))
	for i, id := range rowids {
		at[id] = i
	}
	list, err := json.Marshal(rowids)
	if err != nil {
		return err
	}
	return conn.execute(query, &execOptions{
		Args: []any{match, string(list), slices.Min(rowids), slices.Max(rowids)},
		ResultFunc: func(r row) error {
			if i, ok := at[r.ColumnInt64(0)]; ok && r.ColumnType(1) != sqlite.TypeNull {
				hits[i].Snippet = r.ColumnText(1)
			}
			return nil
		}})
}

// benchNoMessageIndex leaves messages unindexed (no indexer), for the
// benchmark that measures what indexing costs a send; nothing else sets it.
var benchNoMessageIndex bool

// transcriptText is the searchable text of a transcript event: a reply's
// text and a tool's result; "" for everything else.
func transcriptText(e RunEvent) string {
	switch e.Kind {
	case "text", "result", "tool_result", RunEventUserPrompt:
	default:
		return ""
	}
	var d struct {
		Text   string `json:"text"`
		Result string `json:"Result"`
	}
	if json.Unmarshal([]byte(e.Data), &d) != nil {
		return ""
	}
	if e.Kind == "tool_result" {
		return d.Result
	}
	return d.Text
}

// indexRunEvent adds a transcript event's text to the index in the
// caller's transaction.
func indexRunEvent(conn querier, runID string, e RunEvent) error {
	text := transcriptText(e)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return conn.execute(`INSERT INTO search_text (kind, workflow, tag, ref, n, agent, body, at)
		SELECT 'run', workflow, tag, ?1, ?2, agent, ?3, ?4 FROM runs WHERE id = ?1`,
		&execOptions{Args: []any{runID, e.N, text, e.At.UnixMilli()}})
}

// IndexDocument records a document's current content for search. Documents
// live with their provider (files, a database of its own), so the team
// calls this after each write through the daemon, with what the provider
// then holds; content "" forgets the document.
func (db *DB) IndexDocument(ctx context.Context, s Scope, path, content string) error {
	if path == "" {
		return contract.Errorf(contract.CodeInvalid, "document path is required")
	}
	return db.write(ctx, func(conn querier) error {
		if err := addDocVersion(conn, s, path, content, db.nowMs()); err != nil {
			return err
		}
		if strings.TrimSpace(content) == "" {
			return conn.execute(`DELETE FROM search_text WHERE kind = 'doc' AND workflow = ? AND tag = ? AND ref = ? AND n = 0`,
				&execOptions{Args: []any{s.Workflow, s.Tag, path}})
		}
		return conn.execute(`INSERT INTO search_text (kind, workflow, tag, ref, n, agent, body, at)
			VALUES ('doc', ?1, ?2, ?3, 0, '', ?4, ?5)
			ON CONFLICT (kind, workflow, tag, ref, n) DO UPDATE SET body = excluded.body, at = excluded.at`,
			&execOptions{Args: []any{s.Workflow, s.Tag, path, content, db.nowMs()}})
	})
}

// forgetScope drops a workflow:tag's documents and transcript lines from
// the index before its rows go. Messages leave with their rows (SQLite's
// triggers, PostgreSQL's column).
func forgetScope(conn querier, s Scope) error {
	if err := conn.execute(`DELETE FROM doc_versions WHERE workflow = ? AND tag = ?`, &execOptions{Args: []any{s.Workflow, s.Tag}}); err != nil {
		return err
	}
	return conn.execute(`DELETE FROM search_text WHERE workflow = ? AND tag = ?`, &execOptions{Args: []any{s.Workflow, s.Tag}})
}
