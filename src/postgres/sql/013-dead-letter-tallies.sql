-- 013-dead-letter-tallies.sql: how many records each dead-letter queue holds per (reason, dependency, job
-- name), kept up to date by triggers on dead_letters, so that a count without a time range (the console's
-- overview, a filtered page's "matching", a replay preview) sums a handful of rows instead of walking an
-- index as long as the queue: at a million records, counting one reason walked a million index entries
-- (about a second), and counting a reason within a dependency fetched each of the dependency's rows.
--
-- dead_letter_tallies  one row per (prefix, queue, reason, dependency, name) that has records; a row whose
--                      count falls to 0 is deleted, so the table stays as small as the distinct combinations
--                      a queue holds now.
--
-- Every writer of dead_letters takes the queue's row in dead_letter_queues first (011-dead-letter-eviction.sql),
-- so the tallies of one queue change one transaction at a time, in that same order: no new lock cycle. The
-- triggers are statement-level with transition tables: a bulk insert or delete updates each tally once.
-- The tallies are filled from the records already there after the triggers exist; writers wait for this
-- migration while it fills them (CREATE TRIGGER locks dead_letters against writes until it commits).

CREATE TABLE {{schema}}.dead_letter_tallies (
  prefix text NOT NULL,
  queue text NOT NULL,
  reason text NOT NULL,
  dependency text NOT NULL,
  name text NOT NULL,
  records bigint NOT NULL,
  PRIMARY KEY (prefix, queue, reason, dependency, name)
);

-- Adds the inserted records to their tallies.
CREATE FUNCTION {{schema}}.dead_letter_tally_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.dead_letter_tallies AS t (prefix, queue, reason, dependency, name, records)
    SELECT n.prefix, n.queue, n.reason, n.dependency, n.name, count(*)
    FROM new_records n GROUP BY n.prefix, n.queue, n.reason, n.dependency, n.name
    ORDER BY n.prefix, n.queue, n.reason, n.dependency, n.name
    ON CONFLICT (prefix, queue, reason, dependency, name) DO UPDATE SET records = t.records + EXCLUDED.records;
  RETURN NULL;
END
$$;

-- Takes the deleted records off their tallies, and deletes the tallies that fall to 0.
CREATE FUNCTION {{schema}}.dead_letter_tally_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  WITH gone AS (
    SELECT o.prefix, o.queue, o.reason, o.dependency, o.name, count(*) AS n
    FROM old_records o GROUP BY o.prefix, o.queue, o.reason, o.dependency, o.name
  ), updated AS (
    UPDATE {{schema}}.dead_letter_tallies t SET records = t.records - g.n FROM gone g
    WHERE (t.prefix, t.queue, t.reason, t.dependency, t.name) = (g.prefix, g.queue, g.reason, g.dependency, g.name)
    RETURNING t.prefix, t.queue, t.reason, t.dependency, t.name, t.records
  )
  DELETE FROM {{schema}}.dead_letter_tallies t USING updated u
    WHERE u.records <= 0
      AND (t.prefix, t.queue, t.reason, t.dependency, t.name) = (u.prefix, u.queue, u.reason, u.dependency, u.name);
  RETURN NULL;
END
$$;

-- A record whose indexed fields change (the store never does it; a hand-made UPDATE might) moves tallies.
CREATE FUNCTION {{schema}}.dead_letter_tally_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE {{schema}}.dead_letter_tallies t SET records = t.records - 1
    WHERE (t.prefix, t.queue, t.reason, t.dependency, t.name) = (OLD.prefix, OLD.queue, OLD.reason, OLD.dependency, OLD.name);
  DELETE FROM {{schema}}.dead_letter_tallies t
    WHERE (t.prefix, t.queue, t.reason, t.dependency, t.name) = (OLD.prefix, OLD.queue, OLD.reason, OLD.dependency, OLD.name)
      AND t.records <= 0;
  INSERT INTO {{schema}}.dead_letter_tallies AS t (prefix, queue, reason, dependency, name, records)
    VALUES (NEW.prefix, NEW.queue, NEW.reason, NEW.dependency, NEW.name, 1)
    ON CONFLICT (prefix, queue, reason, dependency, name) DO UPDATE SET records = t.records + 1;
  RETURN NULL;
END
$$;

CREATE FUNCTION {{schema}}.dead_letter_tally_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.dead_letter_tallies;
  RETURN NULL;
END
$$;

CREATE TRIGGER dead_letters_tally_insert AFTER INSERT ON {{schema}}.dead_letters
  REFERENCING NEW TABLE AS new_records FOR EACH STATEMENT
  EXECUTE FUNCTION {{schema}}.dead_letter_tally_insert();
CREATE TRIGGER dead_letters_tally_delete AFTER DELETE ON {{schema}}.dead_letters
  REFERENCING OLD TABLE AS old_records FOR EACH STATEMENT
  EXECUTE FUNCTION {{schema}}.dead_letter_tally_delete();
CREATE TRIGGER dead_letters_tally_update AFTER UPDATE OF prefix, queue, reason, dependency, name
  ON {{schema}}.dead_letters FOR EACH ROW
  WHEN ((OLD.prefix, OLD.queue, OLD.reason, OLD.dependency, OLD.name)
        IS DISTINCT FROM (NEW.prefix, NEW.queue, NEW.reason, NEW.dependency, NEW.name))
  EXECUTE FUNCTION {{schema}}.dead_letter_tally_update();
CREATE TRIGGER dead_letters_tally_truncate AFTER TRUNCATE ON {{schema}}.dead_letters
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.dead_letter_tally_truncate();

INSERT INTO {{schema}}.dead_letter_tallies (prefix, queue, reason, dependency, name, records)
  SELECT d.prefix, d.queue, d.reason, d.dependency, d.name, count(*)
  FROM {{schema}}.dead_letters d GROUP BY d.prefix, d.queue, d.reason, d.dependency, d.name;
