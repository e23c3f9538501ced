-- dead_letter_tally_insert(), as 013-dead-letter-tallies.sql last defined it: a trigger function on
-- dead_letters. Applied after the migrations whenever this file changes (src/postgres/migrations.ts);
-- {{schema}} is the quoted schema name.

-- Adds the inserted records to their tallies.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_tally_insert() RETURNS trigger
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
