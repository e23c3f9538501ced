-- dead_letter_register(), as 004-dead-letters.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Registers a queue (once: the first registration time stays) and, when p_set_retention, sets its limits.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_register(
  p_prefix text, p_queue text, p_set_retention boolean, p_max_age_ms bigint, p_max_count bigint, p_now_ms bigint
) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO {{schema}}.dead_letter_queues AS q (prefix, queue, registered_at_ms, max_age_ms, max_count)
    VALUES (p_prefix, p_queue, {{schema}}.now_ms(p_now_ms),
            CASE WHEN p_set_retention THEN p_max_age_ms END, CASE WHEN p_set_retention THEN p_max_count END)
    ON CONFLICT (prefix, queue) DO UPDATE
      SET max_age_ms = CASE WHEN p_set_retention THEN EXCLUDED.max_age_ms ELSE q.max_age_ms END,
          max_count = CASE WHEN p_set_retention THEN EXCLUDED.max_count ELSE q.max_count END
$$;
