-- attempts_write(), as 004-dead-letters.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Writes a job's attempt state for p_ttl_ms, removing up to 4 expired states (of any job) on the way.
CREATE OR REPLACE FUNCTION {{schema}}.attempts_write(
  p_prefix text, p_queue text, p_job_id text, p_created_at double precision, p_state text, p_ttl_ms bigint,
  p_now_ms bigint
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
BEGIN
  DELETE FROM {{schema}}.attempt_states a WHERE (a.prefix, a.queue, a.job_id, a.created_at) IN (
    SELECT e.prefix, e.queue, e.job_id, e.created_at FROM {{schema}}.attempt_states e
    WHERE e.expires_at_ms <= v_now ORDER BY e.expires_at_ms LIMIT 4 FOR UPDATE SKIP LOCKED);
  INSERT INTO {{schema}}.attempt_states (prefix, queue, job_id, created_at, state, expires_at_ms)
    VALUES (p_prefix, p_queue, p_job_id, p_created_at, p_state, v_now + p_ttl_ms)
    ON CONFLICT (prefix, queue, job_id, created_at) DO UPDATE
      SET state = EXCLUDED.state, expires_at_ms = EXCLUDED.expires_at_ms;
END
$$;
