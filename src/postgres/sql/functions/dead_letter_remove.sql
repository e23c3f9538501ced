-- dead_letter_remove(), as 011-dead-letter-eviction.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Removes one record; true when it was there. Takes the queue's row first: the dead-letter
-- store's one lock order is a queue's row in dead_letter_queues, then its records (011-dead-letter-eviction.sql).
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_remove(p_prefix text, p_queue text, p_id bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM {{schema}}.dead_letter_queues q
    WHERE q.prefix = p_prefix AND q.queue = p_queue FOR UPDATE;
  DELETE FROM {{schema}}.dead_letters d WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = p_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE {{schema}}.dead_letter_queues q SET records = q.records - 1
    WHERE q.prefix = p_prefix AND q.queue = p_queue;
  RETURN true;
END
$$;
