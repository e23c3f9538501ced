-- 006-audit-log.sql: the audit log (who, when, what, why), bounded per prefix.
--
-- Ids come from audit_seq, one row per prefix, bumped in the same statement as the insert: they are
-- contiguous and never reused. The statement that appends also deletes what passed the bound.

CREATE TABLE {{schema}}.audit_seq (
  prefix text PRIMARY KEY,
  seq bigint NOT NULL
);

CREATE TABLE {{schema}}.audit_log (
  prefix text NOT NULL,
  id bigint NOT NULL,
  at_ms bigint NOT NULL,
  -- { by, action, target, reason?, detail? }
  entry jsonb NOT NULL,
  PRIMARY KEY (prefix, id)
);
