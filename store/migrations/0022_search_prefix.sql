-- 0022_search_prefix: prefix indexes for prefix* queries (issue 30).
--
-- Without them a prefix* is answered by merging the doclist of every word
-- it expands to: "a1*" over a million messages is 110,000 matches spread
-- over thousands of words, and the merge costs tens of milliseconds before
-- the newest hit comes out. With prefix = '2 3' FTS5 also keeps one
-- doclist per 2- and 3-character prefix, so a short prefix* (the ones
-- that expand to many words) reads one doclist newest first and stops at
-- the limit; a longer one expands to few words anyway. A 4-character
-- index too was measured to cost another 6 % of an indexed insert for
-- prefixes that are rarely that short. Both tables are rebuilt from their
-- content tables, which also drops a deleted workflow's leftovers.
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5(
  content,
  content = 'messages', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2',
  prefix = '2 3'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

DROP TRIGGER search_text_ai;
DROP TRIGGER search_text_ad;
DROP TRIGGER search_text_au;
DROP TABLE search_text_fts;
CREATE VIRTUAL TABLE search_text_fts USING fts5(
  body,
  content = 'search_text', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2',
  prefix = '2 3'
);
CREATE TRIGGER search_text_ai AFTER INSERT ON search_text BEGIN
  INSERT INTO search_text_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER search_text_ad AFTER DELETE ON search_text BEGIN
  INSERT INTO search_text_fts (search_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER search_text_au AFTER UPDATE OF body ON search_text BEGIN
  INSERT INTO search_text_fts (search_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
  INSERT INTO search_text_fts (rowid, body) VALUES (new.id, new.body);
END;
INSERT INTO search_text_fts (search_text_fts) VALUES ('rebuild');
