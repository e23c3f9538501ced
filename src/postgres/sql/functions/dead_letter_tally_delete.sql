-- dead_letter_tally_delete(), as 013-dead-letter-tallies.sql last defined it: a trigger function on
-- dead_letters. Applied after the migrations whenever this file changes (src/postgres/migrations.ts);
-- {{schema}} is the quoted schema name.

-- Takes the deleted records off their tallies, and deletes the tallies that fall to 0.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_tally_delete() RETURNS trigger
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
