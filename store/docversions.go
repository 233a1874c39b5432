package store

import "context"

// The documents' versions: every change a team's document goes through
// the daemon (docChange, which indexes it: IndexDocument) is recorded
// with the channel's newest seq at that moment, so a fork at a seq finds
// the documents as they were then (DocumentAt).

// maxDocVersions is how many versions of one document are kept, newest
// first.
const maxDocVersions = 50

// addDocVersion records content as the newest version of scope s's
// document path, and drops versions beyond maxDocVersions.
func addDocVersion(conn querier, s Scope, path, content string, now int64) error {
	err := conn.execute(`INSERT INTO doc_versions (workflow, tag, path, n, seq, content, at)
		VALUES (?1, ?2, ?3,
			(SELECT COALESCE(MAX(n), 0) + 1 FROM doc_versions WHERE workflow = ?1 AND tag = ?2 AND path = ?3),
			(SELECT COALESCE(MAX(seq), 0) FROM messages WHERE workflow = ?1 AND tag = ?2),
			?4, ?5)`, &execOptions{Args: []any{s.Workflow, s.Tag, path, content, now}})
	if err != nil {
		return err
	}
	return conn.execute(`DELETE FROM doc_versions WHERE workflow = ?1 AND tag = ?2 AND path = ?3 AND n <=
		(SELECT MAX(n) FROM doc_versions WHERE workflow = ?1 AND tag = ?2 AND path = ?3) - ?4`,
		&execOptions{Args: []any{s.Workflow, s.Tag, path, maxDocVersions}})
}

// DocAt says what is known of a document at a seq.
type DocAt int

// What DocumentAt knows.
const (
	// DocUnknown: no version recorded reaches back to the seq (the
	// document was written before versions were kept, or on disk, or its
	// older versions were dropped); only its content now is known.
	DocUnknown DocAt = iota
	// DocFound: the content is the document's as of the seq.
	DocFound
	// DocAbsent: the document was made after the seq.
	DocAbsent
)

// DocumentAt is scope s's document path as it was when the channel's
// newest message was seq: its content then, or that it did not exist yet,
// or that no version recorded reaches back that far.
func (db *DB) DocumentAt(ctx context.Context, s Scope, path string, seq int64) (content string, at DocAt, err error) {
	err = db.read(ctx, func(conn querier) error {
		at = DocUnknown
		err := conn.execute(`SELECT content FROM doc_versions WHERE workflow = ? AND tag = ? AND path = ? AND seq <= ? ORDER BY n DESC LIMIT 1`,
			&execOptions{Args: []any{s.Workflow, s.Tag, path, seq}, ResultFunc: func(r row) error {
				content, at = r.ColumnText(0), DocFound
				return nil
			}})
		if err != nil || at == DocFound {
			return err
		}
		// The oldest version kept is after seq: the first one ever means
		// the document did not exist then.
		return conn.execute(`SELECT MIN(n) FROM doc_versions WHERE workflow = ? AND tag = ? AND path = ?`,
			&execOptions{Args: []any{s.Workflow, s.Tag, path}, ResultFunc: func(r row) error {
				if r.ColumnInt64(0) == 1 {
					at = DocAbsent
				}
				return nil
			}})
	})
	return content, at, err
}
