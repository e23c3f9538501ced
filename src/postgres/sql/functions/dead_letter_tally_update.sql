-- dead_letter_tally_update(), as 013-dead-letter-tallies.sql last defined it: a trigger function on
-- dead_letters. Applied after the migrations whenever this file changes (src/postgres/migrations.ts);
-- {{schema}} is the quoted schema name.

-- A record whose indexed fields change (the store never does it; a hand-made UPDATE might) moves tallies.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_tally_update() RETURNS trigger
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
