-- 009-replay-runs.sql: bulk replay runs (src/runtime/replay-runs.ts), beside the dead letters: each run
-- as JSON with its version, and its snapshot of record ids, one row per position.
--
-- Ids come from replay_run_seq, one row per prefix, bumped in the statement that creates the run, its
-- snapshot and its row together (a run that exists always has its whole snapshot). An update is a
-- compare-and-set on version: it names the version it read and loses to any write in between.

CREATE TABLE {{schema}}.replay_run_seq (
  prefix text PRIMARY KEY,
  seq bigint NOT NULL
);

CREATE TABLE {{schema}}.replay_runs (
  prefix text NOT NULL,
  id bigint NOT NULL,
  version bigint NOT NULL,
  -- The ReplayRun, `id` and `version` included.
  run jsonb NOT NULL,
  PRIMARY KEY (prefix, id)
);

CREATE TABLE {{schema}}.replay_run_ids (
  prefix text NOT NULL,
  run_id bigint NOT NULL,
  position integer NOT NULL,
  record_id text NOT NULL,
  PRIMARY KEY (prefix, run_id, position)
);
