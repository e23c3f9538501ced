-- dead_letter_tally_truncate(), as 013-dead-letter-tallies.sql last defined it: a trigger function on
-- dead_letters. Applied after the migrations whenever this file changes (src/postgres/migrations.ts);
-- {{schema}} is the quoted schema name.

CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_tally_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.dead_letter_tallies;
  RETURN NULL;
END
$$;
