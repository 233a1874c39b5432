-- 0003_proposal_counter: named counters that only go up, so that an id such
-- as prop-N is never reused, even after its proposal is deleted with its
-- workflow. Seeded from the proposals already stored.
CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO counters (name, value)
SELECT 'proposal', coalesce(max(CAST(substr(id, 6) AS INTEGER)), 0) FROM proposals;

-- The daemon's expiry timer asks for the earliest deadline of the active
-- proposals of every scope.
CREATE INDEX proposals_active_by_expiry ON proposals (expires_at) WHERE state = 'active';
